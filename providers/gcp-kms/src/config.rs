//! Where Cloud KMS is, which credentials to use, and how hard to retry.

use std::time::Duration;

use stateseal::Error;
use stateseal::provider::{
    check_google_endpoint, custom_endpoints_allowed, gcp_anonymous_credentials, is_loopback_http,
};

/// Settings of the GCP KMS provider, built with [`GcpKmsConfig::builder`] or [`GcpKmsConfig::from_env`].
///
/// Credentials are Application Default Credentials unless anonymous ones are
/// asked for explicitly (local endpoints only: a contract double, a proxy).
///
/// ```
/// use stateseal_gcp_kms::GcpKmsConfig;
/// let config = GcpKmsConfig::builder()
///     .endpoint("http://127.0.0.1:9011")
///     .anonymous_credentials(true)
///     .build()?;
/// assert_eq!(config.endpoint(), Some("http://127.0.0.1:9011"));
/// # Ok::<(), stateseal::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct GcpKmsConfig {
    endpoint: Option<String>,
    allow_custom_endpoint: bool,
    anonymous: bool,
    attempt_timeout: Duration,
    max_attempts: u32,
}

/// Builds a [`GcpKmsConfig`].
#[derive(Debug, Clone)]
pub struct GcpKmsConfigBuilder(GcpKmsConfig);

impl Default for GcpKmsConfig {
    fn default() -> Self {
        Self {
            endpoint: None,
            allow_custom_endpoint: false,
            anonymous: false,
            attempt_timeout: Duration::from_secs(5),
            max_attempts: 3,
        }
    }
}

impl GcpKmsConfig {
    /// Defaults: `https://cloudkms.googleapis.com`, ADC, 5 s per attempt, 3 attempts.
    pub fn builder() -> GcpKmsConfigBuilder {
        GcpKmsConfigBuilder(Self::default())
    }

    /// Reads `STATESEAL_GCP_KMS_ENDPOINT` (an endpoint override: loopback or
    /// `*.googleapis.com` unless `STATESEAL_ALLOW_CUSTOM_ENDPOINTS=1`) and
    /// `STATESEAL_GCP_CREDENTIALS` (`anonymous`, or unset/`adc` for
    /// Application Default Credentials).
    ///
    /// # Errors
    /// [`Error::Config`] naming the variable.
    pub fn from_env() -> Result<Self, Error> {
        Self::from_vars(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
    }

    /// [`GcpKmsConfig::from_env`] over any variable source.
    ///
    /// # Errors
    /// [`Error::Config`] naming the variable.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, Error> {
        let mut b = Self::builder();
        if let Some(e) = var("STATESEAL_GCP_KMS_ENDPOINT") {
            b = b.endpoint(e);
        }
        b = b.allow_custom_endpoint(custom_endpoints_allowed(&var)?);
        b.anonymous_credentials(gcp_anonymous_credentials(&var)?)
            .build()
    }

    /// The endpoint override, if any.
    pub fn endpoint(&self) -> Option<&str> {
        self.endpoint.as_deref()
    }

    /// Whether requests go unauthenticated.
    pub fn anonymous(&self) -> bool {
        self.anonymous
    }

    /// Timeout of one attempt.
    pub fn attempt_timeout(&self) -> Duration {
        self.attempt_timeout
    }

    /// Attempts per call, first included.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }
}

impl GcpKmsConfigBuilder {
    /// Sends requests to this endpoint instead of Cloud KMS.
    #[must_use]
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.0.endpoint = Some(url.into());
        self
    }

    /// Allows an endpoint override outside `googleapis.com` (it receives the
    /// cloud-platform token); default false.
    #[must_use]
    pub fn allow_custom_endpoint(mut self, yes: bool) -> Self {
        self.0.allow_custom_endpoint = yes;
        self
    }

    /// Sends requests without credentials (only allowed with an endpoint override).
    #[must_use]
    pub fn anonymous_credentials(mut self, yes: bool) -> Self {
        self.0.anonymous = yes;
        self
    }

    /// Timeout of one attempt (default 5 s).
    #[must_use]
    pub fn attempt_timeout(mut self, t: Duration) -> Self {
        self.0.attempt_timeout = t;
        self
    }

    /// Attempts per call, first included (default 3).
    #[must_use]
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.0.max_attempts = n;
        self
    }

    /// Checks and builds the configuration.
    ///
    /// # Errors
    /// [`Error::Config`] for anonymous credentials anywhere but a loopback
    /// endpoint, an endpoint that is neither `https://…` nor `http://` to a
    /// loopback address, or zero attempts or timeout.
    pub fn build(self) -> Result<GcpKmsConfig, Error> {
        let c = self.0;
        if let Some(e) = &c.endpoint {
            check_google_endpoint("gcp-kms", e, c.allow_custom_endpoint)?;
        }
        // Anonymous credentials are for a local emulator or test server only.
        if c.anonymous && !c.endpoint.as_deref().is_some_and(is_loopback_http) {
            return Err(Error::Config(
                "gcp-kms: anonymous credentials need a loopback endpoint override (STATESEAL_GCP_KMS_ENDPOINT=http://127.0.0.1:PORT)".into(),
            ));
        }
        if c.max_attempts == 0 || c.max_attempts > 10 || c.attempt_timeout.is_zero() {
            return Err(Error::Config(
                "gcp-kms: max_attempts must be 1..=10 and the attempt timeout positive".into(),
            ));
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_and_checks() {
        let c = GcpKmsConfig::from_vars(|k| match k {
            "STATESEAL_GCP_KMS_ENDPOINT" => Some("http://127.0.0.1:9".into()),
            "STATESEAL_GCP_CREDENTIALS" => Some("anonymous".into()),
            _ => None,
        })
        .unwrap();
        assert!(c.anonymous());
        let e = GcpKmsConfig::from_vars(|k| {
            (k == "STATESEAL_GCP_CREDENTIALS").then(|| "anonymous".to_owned())
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("STATESEAL_GCP_KMS_ENDPOINT"), "{e}");
        let e = GcpKmsConfig::from_vars(|k| {
            (k == "STATESEAL_GCP_CREDENTIALS").then(|| "oauth".to_owned())
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("expected adc or anonymous"), "{e}");
        assert!(GcpKmsConfig::from_vars(|_| None).is_ok());
        // Plain HTTP (a bearer token, and plaintext keys on wrap) only to a loopback address;
        // anonymous credentials only there too.
        for (endpoint, anonymous) in [
            ("http://kms.internal.example:9", false),
            ("http://127.0.0.1.evil.example:9", false),
            ("http://localhost:9", true),
            ("https://kms.internal.example", true),
        ] {
            let e = GcpKmsConfig::builder()
                .endpoint(endpoint)
                .allow_custom_endpoint(true)
                .anonymous_credentials(anonymous)
                .build()
                .unwrap_err()
                .to_string();
            assert!(e.contains("loopback"), "{endpoint}: {e}");
        }
        assert!(
            GcpKmsConfig::builder()
                .endpoint("https://kms.internal.example")
                .allow_custom_endpoint(true)
                .build()
                .is_ok()
        );
    }

    #[test]
    fn a_custom_endpoint_needs_the_opt_in() {
        let vars = |allow: Option<&'static str>| {
            move |k: &str| match k {
                "STATESEAL_GCP_KMS_ENDPOINT" => Some("https://proxy.invalid".to_owned()),
                "STATESEAL_ALLOW_CUSTOM_ENDPOINTS" => allow.map(str::to_owned),
                _ => None,
            }
        };
        let e = GcpKmsConfig::from_vars(vars(None)).unwrap_err().to_string();
        assert!(
            e.contains("proxy.invalid") && e.contains("STATESEAL_ALLOW_CUSTOM_ENDPOINTS=1"),
            "{e}"
        );
        assert!(GcpKmsConfig::from_vars(vars(Some("0"))).is_err());
        let e = GcpKmsConfig::from_vars(vars(Some("yes")))
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected 1 or 0"), "{e}");
        assert!(GcpKmsConfig::from_vars(vars(Some("1"))).is_ok());
        // Google's own hosts need no opt-in.
        let google = GcpKmsConfig::from_vars(|k| {
            (k == "STATESEAL_GCP_KMS_ENDPOINT").then(|| "https://private.googleapis.com".to_owned())
        });
        assert!(google.is_ok());
    }
}
