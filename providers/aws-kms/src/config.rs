//! How the AWS clients are built: the standard credential chain and region,
//! endpoint overrides, and explicit timeouts and retries.

use std::time::Duration;

use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, SdkConfig};
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use stateseal::Error;
use stateseal::provider::check_endpoint;

/// Settings of the AWS KMS provider, built with [`AwsConfig::builder`].
///
/// Credentials and region come from the standard chain (environment,
/// profile, SSO, web identity, ECS/EC2 metadata). Endpoints: the SDK honours
/// `AWS_ENDPOINT_URL` and `AWS_ENDPOINT_URL_KMS`; [`AwsConfigBuilder::endpoint_url`]
/// overrides them (local test servers).
///
/// ```
/// use std::time::Duration;
/// use stateseal_aws_kms::AwsConfig;
/// let config = AwsConfig::builder()
///     .operation_timeout(Duration::from_secs(5))
///     .max_attempts(4)
///     .build()?;
/// assert_eq!(config.max_attempts(), 4);
/// # Ok::<(), stateseal::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct AwsConfig {
    endpoint_url: Option<String>,
    region: Option<String>,
    credentials: Option<SharedCredentialsProvider>,
    operation_timeout: Duration,
    attempt_timeout: Duration,
    connect_timeout: Duration,
    max_attempts: u32,
}

/// Builds an [`AwsConfig`].
#[derive(Debug, Clone)]
pub struct AwsConfigBuilder(AwsConfig);

impl Default for AwsConfig {
    fn default() -> Self {
        Self {
            endpoint_url: None,
            region: None,
            credentials: None,
            operation_timeout: Duration::from_secs(10),
            attempt_timeout: Duration::from_secs(3),
            connect_timeout: Duration::from_secs(2),
            max_attempts: 3,
        }
    }
}

impl AwsConfig {
    /// Starts from the defaults: 10 s per operation, 3 s per attempt, 2 s to
    /// connect, 3 attempts with the SDK's standard retry (exponential backoff with jitter).
    pub fn builder() -> AwsConfigBuilder {
        AwsConfigBuilder(Self::default())
    }

    /// The endpoint override, if any.
    pub fn endpoint_url(&self) -> Option<&str> {
        self.endpoint_url.as_deref()
    }

    /// Attempts per operation (first try included).
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// Loads the shared SDK configuration (credential chain, region, timeouts,
    /// retries) and checks the KMS endpoint it resolves to, wherever it came
    /// from: the builder, `AWS_ENDPOINT_URL_KMS`, `AWS_ENDPOINT_URL`, or a
    /// profile's `endpoint_url` (its `services` section included). Data keys
    /// travel over it in the clear inside TLS, so plain HTTP is loopback only.
    ///
    /// # Errors
    /// [`Error::Config`] naming the endpoint and where it was set.
    pub(crate) async fn load(&self) -> Result<SdkConfig, Error> {
        let sdk = self.load_unchecked().await;
        if let Some((url, source)) = kms_endpoint(&sdk) {
            check_endpoint("aws", &url).map_err(|e| match e {
                Error::Config(m) => Error::Config(format!("{m} (set by {source})")),
                other => other,
            })?;
        }
        Ok(sdk)
    }

    async fn load_unchecked(&self) -> SdkConfig {
        let mut loader = aws_config::defaults(BehaviorVersion::latest())
            .timeout_config(
                TimeoutConfig::builder()
                    .operation_timeout(self.operation_timeout)
                    .operation_attempt_timeout(self.attempt_timeout)
                    .connect_timeout(self.connect_timeout)
                    .build(),
            )
            .retry_config(RetryConfig::standard().with_max_attempts(self.max_attempts));
        if let Some(url) = &self.endpoint_url {
            loader = loader.endpoint_url(url);
        }
        if let Some(region) = &self.region {
            loader = loader.region(aws_config::Region::new(region.clone()));
        }
        if let Some(creds) = &self.credentials {
            loader = loader.credentials_provider(creds.clone());
        }
        loader.load().await
    }
}

/// The KMS endpoint the SDK will use and where it was set, resolved the way
/// `aws_sdk_kms::config::Builder::from(&SdkConfig)` resolves it.
fn kms_endpoint(sdk: &SdkConfig) -> Option<(String, &'static str)> {
    if sdk.get_origin("endpoint_url").is_client_config() {
        return sdk
            .endpoint_url()
            .map(|u| (u.to_owned(), "AwsConfigBuilder::endpoint_url"));
    }
    let key = aws_types::service_config::ServiceConfigKey::builder()
        .service_id("KMS")
        .env("AWS_ENDPOINT_URL")
        .profile("endpoint_url")
        .build()
        .ok()?;
    // The SDK reads the service variable, the global one and the profile's
    // settings together here; which of them set it, it does not say.
    sdk.service_config()
        .and_then(|c| c.load_config(key))
        .or_else(|| sdk.endpoint_url().map(str::to_owned))
        .map(|u| {
            (
                u,
                "AWS_ENDPOINT_URL_KMS, AWS_ENDPOINT_URL or the profile's endpoint_url",
            )
        })
}

impl AwsConfigBuilder {
    /// Sends every KMS request to this endpoint (a local test server).
    #[must_use]
    pub fn endpoint_url(mut self, url: impl Into<String>) -> Self {
        self.0.endpoint_url = Some(url.into());
        self
    }

    /// The SDK's default region (KMS calls use the ARN's region).
    /// Without it the chain decides (`AWS_REGION`, the profile).
    #[must_use]
    pub fn region(mut self, region: impl Into<String>) -> Self {
        self.0.region = Some(region.into());
        self
    }

    /// Fixed credentials instead of the chain (local test servers; prefer the
    /// chain everywhere else). They print redacted.
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

    /// Total time for one operation, retries included (default 10 s).
    #[must_use]
    pub fn operation_timeout(mut self, t: Duration) -> Self {
        self.0.operation_timeout = t;
        self
    }

    /// Time for one attempt (default 3 s).
    #[must_use]
    pub fn attempt_timeout(mut self, t: Duration) -> Self {
        self.0.attempt_timeout = t;
        self
    }

    /// Time to establish a connection (default 2 s).
    #[must_use]
    pub fn connect_timeout(mut self, t: Duration) -> Self {
        self.0.connect_timeout = t;
        self
    }

    /// Attempts per operation, first try included (default 3).
    #[must_use]
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.0.max_attempts = n;
        self
    }

    /// Checks and builds the configuration.
    ///
    /// # Errors
    /// [`Error::Config`] for a zero timeout or attempt count, an attempt
    /// timeout longer than the operation timeout, or an endpoint that is not
    /// `http(s)://…`.
    pub fn build(self) -> Result<AwsConfig, Error> {
        let c = self.0;
        if c.max_attempts == 0 || c.max_attempts > 10 {
            return Err(Error::Config(
                "aws: max_attempts must be between 1 and 10".into(),
            ));
        }
        if [c.operation_timeout, c.attempt_timeout, c.connect_timeout]
            .iter()
            .any(Duration::is_zero)
        {
            return Err(Error::Config("aws: timeouts must be positive".into()));
        }
        if c.attempt_timeout > c.operation_timeout {
            return Err(Error::Config(
                "aws: the attempt timeout must not exceed the operation timeout".into(),
            ));
        }
        if let Some(url) = &c.endpoint_url {
            check_endpoint("aws", url)?;
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_checks() {
        assert!(AwsConfig::builder().build().is_ok());
        for ok in [
            "http://127.0.0.1:4566",
            "https://kms.eu-west-1.amazonaws.com",
        ] {
            assert!(
                AwsConfig::builder().endpoint_url(ok).build().is_ok(),
                "{ok}"
            );
        }
        for bad in [
            AwsConfig::builder().max_attempts(0),
            AwsConfig::builder().operation_timeout(Duration::ZERO),
            AwsConfig::builder().attempt_timeout(Duration::from_secs(60)),
            AwsConfig::builder().endpoint_url("localhost:4566"),
            AwsConfig::builder().endpoint_url("http://localhost:4566"),
            AwsConfig::builder().endpoint_url("http://127.0.0.1.evil.example:4566"),
            AwsConfig::builder().endpoint_url("http://10.1.2.3:4566"),
        ] {
            let e = bad.build().unwrap_err();
            assert!(
                e.to_string().starts_with("invalid configuration: aws:"),
                "{e}"
            );
        }
    }
}
