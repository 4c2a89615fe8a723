//! `gcp-kms://projects/<p>/locations/<l>/keyRings/<r>/cryptoKeys/<k>`.
//!
//! Data keys are 32 bytes from the OS CSPRNG, wrapped with `Encrypt` and
//! unwrapped with `Decrypt`, both with the wrap context as additional
//! authenticated data. CRC32C end to end, as Google documents: requests carry
//! `plaintext_crc32c` / `ciphertext_crc32c` and `additional_authenticated_data_crc32c`;
//! responses must confirm them (`verified_*`), name a version of the key we
//! asked for, and carry a checksum that matches the bytes we received. Any
//! mismatch is an error: corrupt data is never used, and the retry happens on
//! the scheduler's next refresh, visibly.

use bytes::Bytes;
use google_cloud_gax::error::rpc::Code;
use google_cloud_gax::options::RequestOptionsBuilder;
use google_cloud_kms_v1::client::KeyManagementService;
use stateseal::provider::{
    BoxFuture, DataKey, ErrorClass, KeyProvider, WrapContext, kms_error, provider_failure,
};
use stateseal::{Error, ProviderError, Secret};
use tokio::sync::OnceCell;
use zeroize::Zeroize;

use crate::config::GcpKmsConfig;

/// A parsed `gcp-kms://…/cryptoKeys/<k>` URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CryptoKeyName(String);

impl CryptoKeyName {
    /// Parses a KEK URI.
    ///
    /// ```
    /// use stateseal_gcp_kms::CryptoKeyName;
    /// let k = CryptoKeyName::parse("gcp-kms://projects/p/locations/global/keyRings/r/cryptoKeys/k")?;
    /// assert_eq!(k.as_str(), "projects/p/locations/global/keyRings/r/cryptoKeys/k");
    /// # Ok::<(), stateseal::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`ProviderError::InvalidUri`] for anything but a crypto key name (not a key version).
    pub fn parse(uri: &str) -> Result<Self, Error> {
        let bad = || {
            Error::Provider(ProviderError::InvalidUri {
                uri: uri.to_owned(),
                problem:
                    "expected gcp-kms://projects/<p>/locations/<l>/keyRings/<r>/cryptoKeys/<k>"
                        .into(),
            })
        };
        let name = uri.strip_prefix("gcp-kms://").ok_or_else(bad)?;
        let parts: Vec<&str> = name.split('/').collect();
        let [projects, _, locations, _, rings, _, keys, _] = parts[..] else {
            return Err(bad());
        };
        let ok = [projects, locations, rings, keys]
            == ["projects", "locations", "keyRings", "cryptoKeys"]
            && parts.iter().skip(1).step_by(2).all(|id| {
                !id.is_empty()
                    && id
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            });
        if !ok {
            return Err(bad());
        }
        Ok(Self(name.to_owned()))
    }

    /// The resource name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The `gcp-kms` key provider. Build it with [`crate::register`] or [`GcpKmsProvider::new`].
#[derive(Debug)]
pub struct GcpKmsProvider {
    config: Result<GcpKmsConfig, String>,
    client: OnceCell<KeyManagementService>,
}

fn err(class: ErrorClass, detail: impl Into<String>) -> Error {
    kms_error(crate::SCHEME, class, detail)
}

fn crc(b: &[u8]) -> i64 {
    i64::from(crc32c::crc32c(b))
}

/// The class of a gRPC status code (see the crate docs for the table).
pub(crate) fn class_of_code(code: Code, op: &str) -> ErrorClass {
    match code {
        Code::PermissionDenied | Code::FailedPrecondition | Code::NotFound => ErrorClass::Denied,
        // UNAUTHENTICATED is about the caller's token (expired, or its refresh
        // failed), not the key: it passes when the credentials recover.
        Code::Unauthenticated
        | Code::Unavailable
        | Code::DeadlineExceeded
        | Code::ResourceExhausted
        | Code::Internal
        | Code::Aborted
        | Code::Unknown => ErrorClass::Transient,
        Code::InvalidArgument if op == "Decrypt" => ErrorClass::Invalid,
        _ => ErrorClass::Invalid,
    }
}

fn classify(op: &str, e: &google_cloud_gax::error::Error) -> Error {
    if let Some(status) = e.status() {
        return provider_failure(
            crate::SCHEME,
            class_of_code(status.code, op),
            op,
            &format!("{}: {}", status.code.name(), status.message),
        );
    }
    if e.is_authentication() {
        // The token source failed (metadata server timeout, refresh error): transient.
        return err(
            ErrorClass::Transient,
            format!("{op}: credentials: {e} (check Application Default Credentials)"),
        );
    }
    // No status at all: the request never got an answer, which may pass.
    let class = e
        .http_status_code()
        .map_or(ErrorClass::Transient, ErrorClass::of_http_status);
    provider_failure(crate::SCHEME, class, op, &e.to_string())
}

/// Wipes a plaintext copy held in `Bytes`, when this is its last reference
/// (a shared one cannot be written); returns whether it did.
fn wipe(bytes: Bytes) -> bool {
    match bytes.try_into_mut() {
        Ok(mut unique) => {
            unique.as_mut().zeroize();
            true
        }
        Err(_) => false,
    }
}

impl GcpKmsProvider {
    /// A provider (the client is built on first use).
    pub fn new(config: GcpKmsConfig) -> Self {
        Self {
            config: Ok(config),
            client: OnceCell::new(),
        }
    }

    /// A provider whose every call fails with this configuration error.
    pub(crate) fn misconfigured(problem: String) -> Self {
        Self {
            config: Err(problem),
            client: OnceCell::new(),
        }
    }

    fn config(&self) -> Result<&GcpKmsConfig, Error> {
        self.config
            .as_ref()
            .map_err(|p| err(ErrorClass::Config, p.clone()))
    }

    async fn client(&self) -> Result<&KeyManagementService, Error> {
        let config = self.config()?;
        self.client
            .get_or_try_init(|| async {
                use google_cloud_gax::retry_policy::{Aip194Strict, RetryPolicyExt};
                let mut b = KeyManagementService::builder()
                    .with_retry_policy(Aip194Strict.with_attempt_limit(config.max_attempts()))
                    .with_backoff_policy(
                        google_cloud_gax::exponential_backoff::ExponentialBackoffBuilder::new()
                            .with_initial_delay(std::time::Duration::from_millis(100))
                            .with_maximum_delay(std::time::Duration::from_secs(2))
                            .build()
                            .map_err(|e| err(ErrorClass::Config, format!("backoff: {e}")))?,
                    );
                if let Some(e) = config.endpoint() {
                    b = b.with_endpoint(e);
                }
                if config.anonymous() {
                    b = b.with_credentials(google_cloud_auth::credentials::anonymous::Builder::new().build());
                }
                b.build().await.map_err(|e| {
                    err(ErrorClass::Config, format!("cannot build the Cloud KMS client (Application Default Credentials?): {e}"))
                })
            })
            .await
    }

    async fn generate_key(&self, kek: &str, ctx: WrapContext<'_>) -> Result<DataKey, Error> {
        let key = CryptoKeyName::parse(kek)?;
        let plaintext = Secret::generate()?;
        let aad = ctx.associated_data();
        // Kept so the copy handed to the client can be wiped once the client is done with it.
        let request_copy = Bytes::copy_from_slice(plaintext.expose());
        let resp = self
            .client()
            .await?
            .encrypt()
            .set_name(key.as_str())
            .set_plaintext(request_copy.clone())
            .set_plaintext_crc32c(crc(plaintext.expose()))
            .set_additional_authenticated_data(Bytes::from(aad.clone()))
            .set_additional_authenticated_data_crc32c(crc(&aad))
            .with_idempotency(true)
            .with_attempt_timeout(self.config()?.attempt_timeout())
            .send()
            .await;
        wipe(request_copy);
        let resp = resp.map_err(|e| classify("Encrypt", &e))?;
        let integrity = |what: &str| {
            err(
                ErrorClass::Transient,
                format!("Encrypt: integrity check failed: {what}; the response was discarded"),
            )
        };
        if !resp.verified_plaintext_crc32c || !resp.verified_additional_authenticated_data_crc32c {
            return Err(integrity("the server did not verify the request's CRC32C"));
        }
        let version_of_key = resp
            .name
            .strip_prefix(key.as_str())
            .and_then(|rest| rest.strip_prefix("/cryptoKeyVersions/"))
            .is_some_and(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()));
        if !version_of_key {
            return Err(integrity("the response names another key"));
        }
        if resp.ciphertext_crc32c != Some(crc(&resp.ciphertext)) {
            return Err(integrity("ciphertext CRC32C mismatch"));
        }
        Ok(DataKey {
            plaintext,
            wrapped: resp.ciphertext.to_vec(),
        })
    }

    async fn decrypt(
        &self,
        kek: &str,
        wrapped: &[u8],
        ctx: WrapContext<'_>,
    ) -> Result<Secret, Error> {
        let key = CryptoKeyName::parse(kek)?;
        let aad = ctx.associated_data();
        let mut resp = self
            .client()
            .await?
            .decrypt()
            .set_name(key.as_str())
            .set_ciphertext(Bytes::copy_from_slice(wrapped))
            .set_ciphertext_crc32c(crc(wrapped))
            .set_additional_authenticated_data(Bytes::from(aad.clone()))
            .set_additional_authenticated_data_crc32c(crc(&aad))
            .with_idempotency(true)
            .with_attempt_timeout(self.config()?.attempt_timeout())
            .send()
            .await
            .map_err(|e| classify("Decrypt", &e))?;
        if resp.plaintext_crc32c != Some(crc(&resp.plaintext)) {
            return Err(err(
                ErrorClass::Transient,
                "Decrypt: integrity check failed: plaintext CRC32C mismatch; the response was discarded",
            ));
        }
        if resp.plaintext.len() != 32 {
            return Err(err(
                ErrorClass::Invalid,
                format!(
                    "Decrypt returned a {}-byte data key, not 32",
                    resp.plaintext.len()
                ),
            ));
        }
        let secret = Secret::from_slice(&resp.plaintext);
        wipe(std::mem::take(&mut resp.plaintext));
        secret
    }
}

impl KeyProvider for GcpKmsProvider {
    fn scheme(&self) -> &'static str {
        crate::SCHEME
    }

    fn generate<'a>(
        &'a self,
        kek: &'a str,
        ctx: WrapContext<'a>,
    ) -> BoxFuture<'a, Result<DataKey, Error>> {
        Box::pin(self.generate_key(kek, ctx))
    }

    fn unwrap<'a>(
        &'a self,
        kek: &'a str,
        wrapped: &'a [u8],
        ctx: WrapContext<'a>,
    ) -> BoxFuture<'a, Result<Secret, Error>> {
        Box::pin(self.decrypt(kek, wrapped, ctx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_names() {
        assert!(
            CryptoKeyName::parse(
                "gcp-kms://projects/my-proj/locations/europe-west1/keyRings/r_1/cryptoKeys/k-1"
            )
            .is_ok()
        );
        for bad in [
            "gcp-kms://projects/p/locations/l/keyRings/r/cryptoKeys/k/cryptoKeyVersions/1",
            "gcp-kms://projects/p/locations/l/keyRings/r",
            "gcp-kms://projects//locations/l/keyRings/r/cryptoKeys/k",
            "gcp-kms://project/p/locations/l/keyRings/r/cryptoKeys/k",
            "gcp-kms://projects/p/locations/l/keyRings/r/cryptoKeys/k?x",
            "aws-kms://projects/p/locations/l/keyRings/r/cryptoKeys/k",
        ] {
            assert!(
                matches!(
                    CryptoKeyName::parse(bad),
                    Err(Error::Provider(ProviderError::InvalidUri { .. }))
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn error_classes() {
        assert_eq!(
            class_of_code(Code::PermissionDenied, "Decrypt"),
            ErrorClass::Denied
        );
        assert_eq!(
            class_of_code(Code::FailedPrecondition, "Decrypt"),
            ErrorClass::Denied
        );
        assert_eq!(class_of_code(Code::NotFound, "Encrypt"), ErrorClass::Denied);
        assert_eq!(
            class_of_code(Code::Unavailable, "Decrypt"),
            ErrorClass::Transient
        );
        assert_eq!(
            class_of_code(Code::DeadlineExceeded, "Decrypt"),
            ErrorClass::Transient
        );
        assert_eq!(
            class_of_code(Code::InvalidArgument, "Decrypt"),
            ErrorClass::Invalid
        );
        assert_eq!(
            class_of_code(Code::Unauthenticated, "Decrypt"),
            ErrorClass::Transient,
            "a caller's token problem is not a revocation"
        );
    }

    #[test]
    fn plaintext_copies_are_wiped_when_ours_alone() {
        let unique = Bytes::copy_from_slice(&[7; 32]);
        assert!(wipe(unique));
        let shared = Bytes::copy_from_slice(&[7; 32]);
        let other = shared.clone();
        assert!(!wipe(shared), "a shared copy cannot be written");
        assert_eq!(other.as_ref(), &[7; 32]);
    }

    #[test]
    fn crc32c_matches_the_documented_check_value() {
        // CRC-32C("123456789") = 0xE3069283 (RFC 3720, appendix B.4).
        assert_eq!(crc(b"123456789"), 0xE306_9283);
    }
}
