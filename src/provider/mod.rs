//! Key providers (KMS clients) and the registry that picks one by URI scheme.
//!
//! A provider generates data keys (plaintext + wrapped) and unwraps them, with
//! a wrap context that binds the keyset id and entry id wherever the KMS
//! supports it, so a wrapped key cannot be moved to another keyset or entry.
//! Providers are async and object-safe; they are only called by the rotation
//! scheduler and the CLI, never on the seal/unseal path.

mod endpoint;
mod failure;
mod local;
mod registry;

use std::fmt;

pub use endpoint::{
    ALLOW_CUSTOM_ENDPOINTS_VAR, GCP_CREDENTIALS_VAR, check_endpoint, check_google_endpoint,
    custom_endpoints_allowed, gcp_anonymous_credentials, is_loopback_http,
};
pub use failure::{MAX_PROVIDER_TEXT, bounded_text, cause_chain, provider_failure};
pub use local::LocalProvider;
pub use registry::{MEMORY_REPLAY_STORE, ProviderRegistry, scheme_of};

pub use crate::error::ErrorClass;
use crate::error::{Error, ProviderError};
pub use crate::future::BoxFuture;
use crate::secret::Secret;

/// What a wrapped key is bound to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WrapContext<'a> {
    /// The keyset id (`ks_…`).
    pub keyset_id: &'a str,
    /// The entry id (`k_…`).
    pub entry_id: &'a str,
}

impl WrapContext<'_> {
    /// The context as one byte string: `stateseal/wrap/v1\0<keyset>\0<entry>`,
    /// for KMSs that take opaque associated data.
    pub fn associated_data(&self) -> Vec<u8> {
        let mut aad = b"stateseal/wrap/v1\0".to_vec();
        aad.extend_from_slice(self.keyset_id.as_bytes());
        aad.push(0);
        aad.extend_from_slice(self.entry_id.as_bytes());
        aad
    }
}

/// A freshly generated data key.
pub struct DataKey {
    /// The plaintext key (zeroized on drop).
    pub plaintext: Secret,
    /// The key wrapped under the KEK, for the keyset document.
    pub wrapped: Vec<u8>,
}

impl fmt::Debug for DataKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DataKey")
            .field("plaintext", &self.plaintext)
            .field("wrapped_len", &self.wrapped.len())
            .finish()
    }
}

/// A KMS client: generates and unwraps data keys under a KEK named by a URI.
///
/// Implementations classify every failure ([`ErrorClass`]) in an
/// [`ProviderError::Kms`], never put key material in a message, and move plaintext
/// keys into a [`Secret`] at once.
pub trait KeyProvider: Send + Sync + fmt::Debug {
    /// The URI scheme this provider serves (`local`, `aws-kms`, `gcp-kms`, `hcvault`).
    fn scheme(&self) -> &'static str;

    /// Generates a 32-byte data key and wraps it under `kek`, bound to `ctx`.
    fn generate<'a>(
        &'a self,
        kek: &'a str,
        ctx: WrapContext<'a>,
    ) -> BoxFuture<'a, Result<DataKey, Error>>;

    /// Unwraps `wrapped` under `kek`, checking it is bound to `ctx`.
    fn unwrap<'a>(
        &'a self,
        kek: &'a str,
        wrapped: &'a [u8],
        ctx: WrapContext<'a>,
    ) -> BoxFuture<'a, Result<Secret, Error>>;

    /// Refuses, from its text alone (no I/O), a KEK URI or a pinned prefix
    /// naming keys this provider cannot hold a keyset under, with the reason.
    /// Called where KEKs are configured (`init`, a server's `kek` and
    /// `keyset_keks`, the CLI's `--kek-pin`), so a wrong choice fails there
    /// rather than at the first wrap. The default accepts everything.
    ///
    /// # Errors
    /// [`ProviderError::InvalidUri`] or [`Error::Config`] saying why and what to use instead.
    fn check_kek(&self, kek: &str) -> Result<(), Error> {
        let _ = kek;
        Ok(())
    }
}

/// Builds a [`ProviderError::Kms`].
pub fn kms_error(provider: &str, class: ErrorClass, detail: impl Into<String>) -> Error {
    Error::Provider(ProviderError::Kms {
        provider: provider.to_owned(),
        class,
        detail: detail.into(),
    })
}
