//! `s3://<bucket>/<key>`: the keyset document as one S3 object.
//!
//! The first write carries `If-None-Match: *`, later ones `If-Match: <ETag of
//! the version this store just read at the expected generation>`. Credentials,
//! region and endpoint come from the AWS SDK's standard chain, as the AWS KMS
//! provider's do (`AWS_ENDPOINT_URL_S3`, then `AWS_ENDPOINT_URL`, then the profile).

use std::sync::Arc;

use aws_config::BehaviorVersion;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use object_store::ObjectStore;
use object_store::aws::{AmazonS3Builder, AwsCredential};
use stateseal::provider::{BoxFuture, check_endpoint, is_loopback_http};
use stateseal::{Error, ProviderError, StoredKeyset};

use crate::document::{
    Connect, Limits, ObjectDocument, keyset_store_over_document, limit_setters, short,
};

/// Settings of the S3 store, built with [`S3Config::builder`].
///
/// ```
/// use std::time::Duration;
/// use stateseal_object_store::S3Config;
/// let config = S3Config::builder()
///     .region("eu-west-1")
///     .operation_timeout(Duration::from_secs(5))
///     .build()?;
/// assert_eq!(config.region(), Some("eu-west-1"));
/// # Ok::<(), stateseal::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct S3Config {
    endpoint_url: Option<String>,
    region: Option<String>,
    credentials: Option<SharedCredentialsProvider>,
    limits: Limits,
}

/// Builds an [`S3Config`].
#[derive(Debug, Clone, Default)]
pub struct S3ConfigBuilder(S3Config);

impl S3Config {
    /// Starts from the defaults: the SDK's chain for credentials, region and
    /// endpoint; 10 s per operation, 3 s per attempt, 2 s to connect, 3 attempts.
    pub fn builder() -> S3ConfigBuilder {
        S3ConfigBuilder::default()
    }

    /// The region override, if any.
    pub fn region(&self) -> Option<&str> {
        self.region.as_deref()
    }
}

impl S3ConfigBuilder {
    /// Sends every S3 request here instead (a local test server or a private endpoint).
    #[must_use]
    pub fn endpoint_url(mut self, url: impl Into<String>) -> Self {
        self.0.endpoint_url = Some(url.into());
        self
    }

    /// The bucket's region. Without it the chain decides (`AWS_REGION`, the profile).
    #[must_use]
    pub fn region(mut self, region: impl Into<String>) -> Self {
        self.0.region = Some(region.into());
        self
    }

    /// Fixed credentials instead of the chain (local test servers). They print redacted.
    #[must_use]
    pub fn credentials(mut self, credentials: aws_credential_types::Credentials) -> Self {
        self.0.credentials = Some(SharedCredentialsProvider::new(credentials));
        self
    }

    /// A credentials provider of your own instead of the standard chain.
    #[must_use]
    pub fn credentials_provider(mut self, provider: impl ProvideCredentials + 'static) -> Self {
        self.0.credentials = Some(SharedCredentialsProvider::new(provider));
        self
    }

    limit_setters!();

    /// Checks and builds the configuration.
    ///
    /// # Errors
    /// [`Error::Config`] for out-of-range timeouts or attempts, or an endpoint
    /// that is neither `https://…` nor `http://` to a loopback address.
    pub fn build(self) -> Result<S3Config, Error> {
        let c = self.0;
        c.limits.check("s3")?;
        if let Some(url) = &c.endpoint_url {
            check_endpoint("s3", url)?;
        }
        Ok(c)
    }
}

/// The AWS SDK's credential chain, lent to object_store.
#[derive(Debug)]
struct SdkCredentials(SharedCredentialsProvider);

#[async_trait::async_trait]
impl object_store::CredentialProvider for SdkCredentials {
    type Credential = AwsCredential;

    async fn get_credential(&self) -> object_store::Result<Arc<AwsCredential>> {
        let c = self
            .0
            .provide_credentials()
            .await
            .map_err(|e| object_store::Error::Generic {
                store: "S3",
                source: Box::new(e),
            })?;
        Ok(Arc::new(AwsCredential {
            key_id: c.access_key_id().to_owned(),
            secret_key: c.secret_access_key().to_owned(),
            token: c.session_token().map(str::to_owned),
        }))
    }
}

#[derive(Debug)]
struct S3Connect {
    config: S3Config,
    uri: String,
    bucket: String,
}

impl S3Connect {
    async fn build(&self) -> Result<Arc<dyn ObjectStore>, Error> {
        let c = &self.config;
        let fail = |p: String| {
            Error::Provider(ProviderError::Store {
                uri: self.uri.clone(),
                problem: p,
            })
        };
        let mut loader = aws_config::defaults(BehaviorVersion::latest());
        if let Some(region) = &c.region {
            loader = loader.region(aws_config::Region::new(region.clone()));
        }
        if let Some(creds) = &c.credentials {
            loader = loader.credentials_provider(creds.clone());
        }
        let sdk = loader.load().await;
        let region = sdk.region().map(ToString::to_string).ok_or_else(|| {
            fail("no AWS region is configured (set AWS_REGION or a profile region)".into())
        })?;
        let creds = sdk
            .credentials_provider()
            .ok_or_else(|| fail("no AWS credentials provider is configured".into()))?;
        let endpoint = c
            .endpoint_url
            .clone()
            .or_else(|| std::env::var("AWS_ENDPOINT_URL_S3").ok())
            .or_else(|| sdk.endpoint_url().map(str::to_owned));
        let mut b = AmazonS3Builder::new()
            .with_bucket_name(&self.bucket)
            .with_region(region)
            .with_credentials(Arc::new(SdkCredentials(creds)))
            .with_retry(c.limits.retry());
        let mut allow_http = false;
        if let Some(url) = endpoint {
            // Plain HTTP only to a loopback endpoint (a local test server).
            check_endpoint("s3", &url)?;
            allow_http = is_loopback_http(&url);
            b = b.with_endpoint(url);
        }
        let s3 = b
            .with_client_options(c.limits.client_options(allow_http))
            .build()
            .map_err(|e| fail(format!("S3 client: {}", short(&e))))?;
        Ok(Arc::new(s3))
    }
}

impl Connect for S3Connect {
    fn connect(&self) -> BoxFuture<'_, Result<Arc<dyn ObjectStore>, Error>> {
        Box::pin(self.build())
    }
}

/// S3 bucket names: 3–63 lowercase letters, digits, `-` and `.`.
fn s3_bucket(b: &str) -> bool {
    (3..=63).contains(&b.len())
        && b.bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-' || c == b'.')
}

/// The S3 keyset store. Open it through the registry ([`crate::register_s3`]).
#[derive(Debug)]
pub struct S3Store(ObjectDocument<S3Connect>);

impl S3Store {
    /// A store for `s3://<bucket>/<key>` (the client is built on first use).
    ///
    /// # Errors
    /// [`ProviderError::InvalidUri`].
    pub fn open(config: S3Config, uri: &str) -> Result<Self, Error> {
        ObjectDocument::open(crate::S3_SCHEME, uri, s3_bucket, |uri, bucket| S3Connect {
            config,
            uri: uri.to_owned(),
            bucket: bucket.to_owned(),
        })
        .map(Self)
    }
}

keyset_store_over_document!(S3Store);

#[cfg(test)]
mod tests {
    use super::*;
    use stateseal::KeysetStore;
    use std::time::Duration;

    #[test]
    fn store_uris() {
        let c = || S3Config::builder().build().expect("config");
        assert_eq!(
            S3Store::open(c(), "s3://stateseal-keys/prod/keyset.json")
                .expect("uri")
                .uri(),
            "s3://stateseal-keys/prod/keyset.json"
        );
        for bad in [
            "s3://stateseal-keys",
            "s3://ab/k",
            "s3://Upper/k",
            "s3://under_score/k",
            "s3://stateseal-keys/a//b",
            "gs://stateseal-keys/k",
        ] {
            assert!(
                matches!(
                    S3Store::open(c(), bad),
                    Err(Error::Provider(ProviderError::InvalidUri { .. }))
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn builder_checks() {
        for bad in [
            S3Config::builder().max_attempts(0),
            S3Config::builder().operation_timeout(Duration::ZERO),
            S3Config::builder().endpoint_url("http://localhost:4566"),
            S3Config::builder().endpoint_url("http://127.0.0.1.evil.example:4566"),
            S3Config::builder().endpoint_url("http://10.1.2.3:4566"),
        ] {
            let e = bad.build().unwrap_err();
            assert!(
                e.to_string().starts_with("invalid configuration: s3:"),
                "{e}"
            );
        }
        assert!(
            S3Config::builder()
                .endpoint_url("http://127.0.0.1:4566")
                .build()
                .is_ok()
        );
    }
}
