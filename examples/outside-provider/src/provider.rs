//! `toy-hsm://<key>`: data keys generated here and wrapped by the HSM, each
//! wrap bound to its keyset, entry and purpose as AES-GCM associated data.

use std::sync::Arc;

use stateseal::provider::{
    BoxFuture, DataKey, ErrorClass, KeyProvider, WrapContext, provider_failure,
};
use stateseal::{Error, ProviderError, Secret};

use crate::hsm::{Hsm, HsmError};

/// The provider. [`HsmProvider::new`] is the one to use;
/// [`HsmProvider::without_binding`] is the mistake the contract catches.
#[derive(Debug)]
pub struct HsmProvider {
    hsm: Arc<Hsm>,
    bind: bool,
}

impl HsmProvider {
    /// The URI scheme of its KEKs: `toy-hsm://<key name>`.
    pub const SCHEME: &'static str = "toy-hsm";

    /// Wraps under the HSM's keys, bound to the wrap context.
    pub fn new(hsm: Arc<Hsm>) -> Self {
        Self { hsm, bind: true }
    }

    /// Wraps with no associated data, so a wrapped key unwraps under any
    /// context: a store writer who knows one key under the KEK can make it
    /// the keyset's MAC key. `stateseal_contract::provider::run` fails it.
    pub fn without_binding(hsm: Arc<Hsm>) -> Self {
        Self { hsm, bind: false }
    }

    /// What the HSM binds the wrap to.
    fn aad(&self, ctx: WrapContext<'_>) -> Vec<u8> {
        if self.bind {
            ctx.associated_data()
        } else {
            Vec::new()
        }
    }
}

/// The key name in `toy-hsm://<name>`.
fn key_name(kek: &str) -> Result<&str, Error> {
    match kek.strip_prefix("toy-hsm://") {
        Some(name) if !name.is_empty() && !name.contains('/') => Ok(name),
        _ => Err(Error::Provider(ProviderError::InvalidUri {
            uri: kek.to_owned(),
            problem: "expected toy-hsm://<key name>".into(),
        })),
    }
}

/// Every HSM failure, classified in one place. The HSM's text never holds
/// key material, and nothing else goes into the message.
fn failure(op: &str, e: HsmError) -> Error {
    let class = match e {
        // Retry with backoff; cached keys keep serving meanwhile.
        HsmError::Unavailable | HsmError::TokenExpired => ErrorClass::Transient,
        // Access withdrawn: the key is dropped once its cached unwrap expires.
        HsmError::KeyDisabled | HsmError::NoSuchKey => ErrorClass::Denied,
        // Another ciphertext or another context: this entry can never unwrap.
        HsmError::BadCiphertext => ErrorClass::Invalid,
    };
    provider_failure(HsmProvider::SCHEME, class, op, &e.to_string())
}

impl KeyProvider for HsmProvider {
    fn scheme(&self) -> &'static str {
        Self::SCHEME
    }

    fn generate<'a>(
        &'a self,
        kek: &'a str,
        ctx: WrapContext<'a>,
    ) -> BoxFuture<'a, Result<DataKey, Error>> {
        Box::pin(async move {
            let name = key_name(kek)?;
            let plaintext = Secret::generate()?;
            let wrapped = self
                .hsm
                .encrypt(name, plaintext.expose(), &self.aad(ctx))
                .map_err(|e| failure("encrypt", e))?;
            Ok(DataKey { plaintext, wrapped })
        })
    }

    fn unwrap<'a>(
        &'a self,
        kek: &'a str,
        wrapped: &'a [u8],
        ctx: WrapContext<'a>,
    ) -> BoxFuture<'a, Result<Secret, Error>> {
        Box::pin(async move {
            let name = key_name(kek)?;
            let plaintext = self
                .hsm
                .decrypt(name, wrapped, &self.aad(ctx))
                .map_err(|e| failure("decrypt", e))?;
            Secret::from_slice(&plaintext)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kek_uris() {
        assert_eq!(key_name("toy-hsm://fleet").ok(), Some("fleet"));
        for bad in ["toy-hsm://", "toy-hsm://a/b", "aws-kms://fleet"] {
            assert!(
                matches!(
                    key_name(bad),
                    Err(Error::Provider(ProviderError::InvalidUri { .. }))
                ),
                "{bad}"
            );
        }
    }
}
