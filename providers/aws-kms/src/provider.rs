//! `aws-kms://<key ARN | alias ARN>`: data keys from AWS KMS.
//!
//! `GenerateDataKey` (AES_256) makes a key and its wrap in one call; `Decrypt`
//! unwraps. Both always pass the `KeyId` (so a ciphertext made under another
//! key is refused rather than decrypted by whichever key made it) and an
//! encryption context `{"stateseal:keyset": <id>, "stateseal:entry": <id>}`,
//! which KMS authenticates and CloudTrail logs, and which IAM policies can
//! require (`kms:EncryptionContextKeys`).

use std::collections::HashMap;
use std::error::Error as StdError;

use aws_sdk_kms::Client;
use aws_sdk_kms::config::http::HttpResponse;
use aws_sdk_kms::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_kms::primitives::Blob;
use aws_sdk_kms::types::DataKeySpec;
use stateseal::provider::{
    BoxFuture, DataKey, ErrorClass, KeyProvider, WrapContext, bounded_text, kms_error,
    provider_failure,
};
use stateseal::{Error, ProviderError, Secret};
use tokio::sync::{Mutex, OnceCell};

use crate::config::AwsConfig;

/// Encryption context key naming the keyset.
pub const CONTEXT_KEYSET: &str = "stateseal:keyset";
/// Encryption context key naming the entry.
pub const CONTEXT_ENTRY: &str = "stateseal:entry";

/// A parsed KMS key or alias ARN.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KmsKeyArn {
    /// The full ARN (passed as `KeyId`).
    pub arn: String,
    /// The region the ARN names (the client is sent there).
    pub region: String,
}

impl KmsKeyArn {
    /// Parses `aws-kms://arn:<partition>:kms:<region>:<account>:key/<id>` or `…:alias/<name>`.
    ///
    /// ```
    /// use stateseal_aws_kms::KmsKeyArn;
    /// let k = KmsKeyArn::parse("aws-kms://arn:aws:kms:eu-west-1:111122223333:alias/stateseal")?;
    /// assert_eq!(k.region, "eu-west-1");
    /// # Ok::<(), stateseal::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`ProviderError::InvalidUri`] for anything else (a bare key id has no region: use the ARN).
    pub fn parse(uri: &str) -> Result<Self, Error> {
        let bad = |why: &str| {
            Error::Provider(ProviderError::InvalidUri {
                uri: uri.to_owned(),
                problem: format!(
                    "expected aws-kms://arn:aws:kms:<region>:<account>:key/<id> or …:alias/<name> ({why})"
                ),
            })
        };
        let arn = uri
            .strip_prefix("aws-kms://")
            .ok_or_else(|| bad("scheme"))?;
        let parts: Vec<&str> = arn.splitn(6, ':').collect();
        let [prefix, partition, service, region, account, resource] = parts[..] else {
            return Err(bad("not an ARN"));
        };
        if prefix != "arn" || !partition.starts_with("aws") || service != "kms" {
            return Err(bad("not a KMS ARN"));
        }
        let region_ok = !region.is_empty()
            && region
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !region_ok {
            return Err(bad("no region"));
        }
        if account.len() != 12 || !account.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad("account must be 12 digits"));
        }
        let named = resource
            .strip_prefix("key/")
            .or_else(|| resource.strip_prefix("alias/"));
        if named.is_none_or(|n| n.is_empty() || n.contains(char::is_whitespace)) {
            return Err(bad("resource must be key/<id> or alias/<name>"));
        }
        Ok(Self {
            arn: arn.to_owned(),
            region: region.to_owned(),
        })
    }
}

/// The `aws-kms` key provider. Build it with [`crate::register`] or [`AwsKmsProvider::new`].
#[derive(Debug)]
pub struct AwsKmsProvider {
    config: AwsConfig,
    sdk: OnceCell<aws_config::SdkConfig>,
    clients: Mutex<HashMap<String, Client>>,
}

fn err(class: ErrorClass, detail: impl Into<String>) -> Error {
    kms_error(crate::SCHEME, class, detail)
}

/// The class of a KMS error code (see the crate docs for the table).
pub(crate) fn class_of_code(code: &str, status: u16) -> ErrorClass {
    match code {
        "AccessDeniedException"
        | "DisabledException"
        | "KMSInvalidStateException"
        | "NotFoundException" => ErrorClass::Denied,
        // The caller's credentials, not the key: an expired session, a clock off
        // by minutes, a token the chain has not refreshed yet. Treating them as
        // revocation would empty rings fleet-wide during a credential blip.
        "UnrecognizedClientException"
        | "InvalidSignatureException"
        | "ExpiredTokenException"
        | "ExpiredToken"
        | "RequestExpired"
        | "InvalidClientTokenId"
        | "IncompleteSignature"
        | "SignatureDoesNotMatch" => ErrorClass::Transient,
        "InvalidCiphertextException" | "IncorrectKeyException" | "InvalidKeyUsageException" => {
            ErrorClass::Invalid
        }
        "ThrottlingException"
        | "LimitExceededException"
        | "KMSInternalException"
        | "DependencyTimeoutException"
        | "KeyUnavailableException" => ErrorClass::Transient,
        _ => ErrorClass::of_http_status(status),
    }
}

/// A [`ProviderError::Kms`] for a failed SDK call. Messages name the operation, the
/// AWS error code and AWS's message (which names keys by ARN, never material).
pub(crate) fn classify<E>(op: &str, e: &SdkError<E, HttpResponse>) -> Error
where
    E: ProvideErrorMetadata + StdError + 'static,
{
    match e {
        SdkError::ServiceError(se) => {
            let code = se.err().code().unwrap_or("Unknown");
            let status = se.raw().status().as_u16();
            let msg = se.err().message().unwrap_or("");
            provider_failure(
                crate::SCHEME,
                class_of_code(code, status),
                op,
                &format!("{code}: {msg}"),
            )
        }
        SdkError::TimeoutError(_) => err(ErrorClass::Transient, format!("{op}: timed out")),
        SdkError::ConstructionFailure(_) => err(
            ErrorClass::Config,
            format!("{op}: cannot build the request: {}", DisplayErrorContext(e)),
        ),
        _ => {
            // Dispatch failures include the credential chain's (IMDS or metadata
            // timeouts, an STS hiccup, no credentials yet): all may pass, none says
            // anything about the key, so they are transient.
            let text = DisplayErrorContext(e).to_string();
            let hint = if text.contains("credentials") || text.contains("Credentials") {
                " (check the credential chain: environment, profile, role, instance metadata)"
            } else {
                ""
            };
            err(
                ErrorClass::Transient,
                format!("{op}: {}{hint}", bounded_text(&text)),
            )
        }
    }
}

impl AwsKmsProvider {
    /// A provider with its own SDK configuration (loaded on first use).
    pub fn new(config: AwsConfig) -> Self {
        Self {
            config,
            sdk: OnceCell::new(),
            clients: Mutex::new(HashMap::new()),
        }
    }

    /// The client for the ARN's region (one per region, built once).
    async fn client(&self, region: &str) -> Result<Client, Error> {
        let sdk = self.sdk.get_or_try_init(|| self.config.load()).await?;
        let mut clients = self.clients.lock().await;
        let client = clients
            .entry(region.to_owned())
            .or_insert_with(|| {
                let conf = aws_sdk_kms::config::Builder::from(sdk)
                    .region(aws_sdk_kms::config::Region::new(region.to_owned()))
                    .build();
                Client::from_conf(conf)
            })
            .clone();
        Ok(client)
    }

    async fn generate_key(&self, kek: &str, ctx: WrapContext<'_>) -> Result<DataKey, Error> {
        let key = KmsKeyArn::parse(kek)?;
        let out = self
            .client(&key.region)
            .await?
            .generate_data_key()
            .key_id(&key.arn)
            .key_spec(DataKeySpec::Aes256)
            .encryption_context(CONTEXT_KEYSET, ctx.keyset_id)
            .encryption_context(CONTEXT_ENTRY, ctx.entry_id)
            .send()
            .await
            .map_err(|e| classify("GenerateDataKey", &e))?;
        let plaintext = out
            .plaintext
            .map(Blob::into_inner)
            .ok_or_else(|| err(ErrorClass::Invalid, "GenerateDataKey returned no plaintext"))?;
        let plaintext = exact_key(plaintext)?;
        let wrapped = out
            .ciphertext_blob
            .map(Blob::into_inner)
            .filter(|w| !w.is_empty())
            .ok_or_else(|| {
                err(
                    ErrorClass::Invalid,
                    "GenerateDataKey returned no ciphertext",
                )
            })?;
        Ok(DataKey { plaintext, wrapped })
    }

    async fn decrypt(
        &self,
        kek: &str,
        wrapped: &[u8],
        ctx: WrapContext<'_>,
    ) -> Result<Secret, Error> {
        let key = KmsKeyArn::parse(kek)?;
        let out = self
            .client(&key.region)
            .await?
            .decrypt()
            .key_id(&key.arn)
            .ciphertext_blob(Blob::new(wrapped))
            .encryption_context(CONTEXT_KEYSET, ctx.keyset_id)
            .encryption_context(CONTEXT_ENTRY, ctx.entry_id)
            .send()
            .await
            .map_err(|e| classify("Decrypt", &e))?;
        let plaintext = out
            .plaintext
            .map(Blob::into_inner)
            .ok_or_else(|| err(ErrorClass::Invalid, "Decrypt returned no plaintext"))?;
        exact_key(plaintext)
    }
}

/// Moves a 32-byte key into a zeroizing [`Secret`]; wipes and refuses any other length.
fn exact_key(mut bytes: Vec<u8>) -> Result<Secret, Error> {
    if bytes.len() != 32 {
        let n = bytes.len();
        zeroize::Zeroize::zeroize(&mut bytes);
        return Err(err(
            ErrorClass::Invalid,
            format!("KMS returned a {n}-byte data key, not 32"),
        ));
    }
    Secret::new(bytes)
}

impl KeyProvider for AwsKmsProvider {
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
    fn arns() {
        let k = KmsKeyArn::parse(
            "aws-kms://arn:aws:kms:us-east-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab",
        )
        .unwrap();
        assert_eq!(k.region, "us-east-2");
        assert!(k.arn.starts_with("arn:aws:kms:"));
        assert!(
            KmsKeyArn::parse("aws-kms://arn:aws-cn:kms:cn-north-1:111122223333:alias/x").is_ok()
        );
        for bad in [
            "aws-kms://1234abcd-12ab-34cd-56ef-1234567890ab",
            "aws-kms://alias/stateseal",
            "aws-kms://arn:aws:s3:eu-west-1:111122223333:key/x",
            "aws-kms://arn:aws:kms::111122223333:key/x",
            "aws-kms://arn:aws:kms:eu-west-1:1:key/x",
            "aws-kms://arn:aws:kms:eu-west-1:111122223333:key/",
            "aws-kms://arn:aws:kms:eu-west-1:111122223333:grant/x",
            "gcp-kms://arn:aws:kms:eu-west-1:111122223333:key/x",
        ] {
            assert!(
                matches!(
                    KmsKeyArn::parse(bad),
                    Err(Error::Provider(ProviderError::InvalidUri { .. }))
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn error_classes() {
        for (code, class) in [
            ("AccessDeniedException", ErrorClass::Denied),
            ("DisabledException", ErrorClass::Denied),
            ("KMSInvalidStateException", ErrorClass::Denied),
            ("NotFoundException", ErrorClass::Denied),
            ("InvalidCiphertextException", ErrorClass::Invalid),
            ("IncorrectKeyException", ErrorClass::Invalid),
            ("ThrottlingException", ErrorClass::Transient),
            ("KMSInternalException", ErrorClass::Transient),
            ("DependencyTimeoutException", ErrorClass::Transient),
            ("ExpiredTokenException", ErrorClass::Transient),
            ("UnrecognizedClientException", ErrorClass::Transient),
            ("InvalidSignatureException", ErrorClass::Transient),
            ("RequestExpired", ErrorClass::Transient),
        ] {
            assert_eq!(class_of_code(code, 400), class, "{code}");
        }
        assert_eq!(class_of_code("Whatever", 503), ErrorClass::Transient);
        assert_eq!(class_of_code("Whatever", 400), ErrorClass::Invalid);
    }

    #[test]
    fn wrong_length_keys_are_refused() {
        assert!(exact_key(vec![1; 32]).is_ok());
        let e = exact_key(vec![1; 16]).unwrap_err().to_string();
        assert!(e.contains("16-byte"), "{e}");
    }
}
