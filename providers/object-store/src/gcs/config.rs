//! Where Cloud Storage is, which credentials to use, and how hard to retry.

use stateseal::Error;
use stateseal::provider::{
    check_google_endpoint, custom_endpoints_allowed, gcp_anonymous_credentials, is_loopback_http,
};

use crate::document::{Limits, limit_setters};

/// Settings of the GCS store, built with [`GcsConfig::builder`] or [`GcsConfig::from_env`].
///
/// Credentials are Application Default Credentials, found as Google's
/// libraries find them: `GOOGLE_APPLICATION_CREDENTIALS`, then gcloud's
/// `application_default_credentials.json`, then the metadata server (GKE
/// workload identity, Compute Engine, Cloud Run). Anonymous requests are for a
/// loopback endpoint only (an emulator).
///
/// ```
/// use stateseal_object_store::GcsConfig;
/// let config = GcsConfig::builder()
///     .endpoint("http://127.0.0.1:4443")
///     .anonymous_credentials(true)
///     .build()?;
/// assert_eq!(config.endpoint(), Some("http://127.0.0.1:4443"));
/// # Ok::<(), stateseal::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct GcsConfig {
    endpoint: Option<String>,
    allow_custom_endpoint: bool,
    anonymous: bool,
    pub(crate) limits: Limits,
}

/// Builds a [`GcsConfig`].
#[derive(Debug, Clone, Default)]
pub struct GcsConfigBuilder(GcsConfig);

impl GcsConfig {
    /// Defaults: `https://storage.googleapis.com`, ADC, 10 s per operation,
    /// 3 s per attempt, 2 s to connect, 3 attempts.
    pub fn builder() -> GcsConfigBuilder {
        GcsConfigBuilder::default()
    }

    /// Reads `STATESEAL_GCS_ENDPOINT` (an emulator or a private endpoint such
    /// as Private Service Connect: loopback or `*.googleapis.com` unless
    /// `STATESEAL_ALLOW_CUSTOM_ENDPOINTS=1`) and `STATESEAL_GCP_CREDENTIALS` (`anonymous`,
    /// or unset/`adc`), the variable the Cloud KMS provider reads too.
    ///
    /// # Errors
    /// [`Error::Config`] naming the variable.
    pub fn from_env() -> Result<Self, Error> {
        Self::from_vars(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
    }

    /// [`GcsConfig::from_env`] over any variable source.
    ///
    /// # Errors
    /// [`Error::Config`] naming the variable.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, Error> {
        let mut b = Self::builder();
        if let Some(e) = var("STATESEAL_GCS_ENDPOINT") {
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
}

impl GcsConfigBuilder {
    /// Sends requests to this endpoint (`scheme://host[:port]`) instead of
    /// `https://storage.googleapis.com`.
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

    /// Sends requests without credentials (only with a loopback endpoint).
    #[must_use]
    pub fn anonymous_credentials(mut self, yes: bool) -> Self {
        self.0.anonymous = yes;
        self
    }

    limit_setters!();

    /// Checks and builds the configuration.
    ///
    /// # Errors
    /// [`Error::Config`] for an endpoint that is neither `https://host` nor
    /// `http://` to a loopback address (or that carries a path), anonymous
    /// credentials without a loopback endpoint, or out-of-range limits.
    pub fn build(self) -> Result<GcsConfig, Error> {
        let mut c = self.0;
        c.limits.check("gcs")?;
        if let Some(e) = &mut c.endpoint {
            check_google_endpoint("gcs", e, c.allow_custom_endpoint)?;
            let trimmed = e.trim_end_matches('/');
            let authority = trimmed.split_once("://").map_or("", |(_, a)| a);
            if authority.contains(['/', '?', '#', '@']) {
                return Err(Error::Config(format!(
                    "gcs: endpoint {e:?} must be scheme://host[:port], without a path, query or user"
                )));
            }
            *e = trimmed.to_owned();
        }
        // Anonymous credentials are for a local emulator or test server only.
        if c.anonymous && !c.endpoint.as_deref().is_some_and(is_loopback_http) {
            return Err(Error::Config(
                "gcs: anonymous credentials need a loopback endpoint override (STATESEAL_GCS_ENDPOINT=http://127.0.0.1:PORT)".into(),
            ));
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_vars() {
        let c = GcsConfig::from_vars(|k| match k {
            "STATESEAL_GCS_ENDPOINT" => Some("http://127.0.0.1:4443/".into()),
            "STATESEAL_GCP_CREDENTIALS" => Some("anonymous".into()),
            _ => None,
        })
        .expect("config");
        assert_eq!(c.endpoint(), Some("http://127.0.0.1:4443"));
        assert!(c.anonymous());
        let adc = GcsConfig::from_vars(|_| None).expect("adc");
        assert!(!adc.anonymous() && adc.endpoint().is_none());
        let e =
            GcsConfig::from_vars(|k| (k == "STATESEAL_GCP_CREDENTIALS").then(|| "none".to_owned()))
                .unwrap_err();
        let e = e.to_string();
        assert!(e.contains("STATESEAL_GCP_CREDENTIALS: expected adc"), "{e}");
        assert!(!e.contains("none"), "the value is not echoed: {e}");
    }

    #[test]
    fn builder_checks() {
        assert!(
            GcsConfig::builder()
                .endpoint("https://storage-psc.p.googleapis.com")
                .build()
                .is_ok()
        );
        for (bad, says) in [
            (
                GcsConfig::builder().anonymous_credentials(true),
                "STATESEAL_GCS_ENDPOINT",
            ),
            (
                GcsConfig::builder()
                    .endpoint("https://storage.example")
                    .allow_custom_endpoint(true)
                    .anonymous_credentials(true),
                "loopback endpoint",
            ),
            (
                GcsConfig::builder().endpoint("http://storage.example"),
                "https://",
            ),
            (
                GcsConfig::builder().endpoint("http://127.0.0.1.evil.example"),
                "https://",
            ),
            (
                GcsConfig::builder().endpoint("http://127.0.0.1:4443/storage"),
                "without a path",
            ),
            (
                GcsConfig::builder()
                    .endpoint("https://u@storage.example")
                    .allow_custom_endpoint(true),
                "without a path",
            ),
            (GcsConfig::builder().max_attempts(11), "max_attempts"),
        ] {
            let e = bad.build().unwrap_err().to_string();
            assert!(e.starts_with("invalid configuration: gcs:"), "{e}");
            assert!(e.contains(says), "{e}");
        }
    }

    #[test]
    fn a_custom_endpoint_needs_the_opt_in() {
        let vars = |allow: Option<&'static str>| {
            move |k: &str| match k {
                "STATESEAL_GCS_ENDPOINT" => Some("https://proxy.invalid".to_owned()),
                "STATESEAL_ALLOW_CUSTOM_ENDPOINTS" => allow.map(str::to_owned),
                _ => None,
            }
        };
        let e = GcsConfig::from_vars(vars(None)).unwrap_err().to_string();
        assert!(
            e.contains("proxy.invalid") && e.contains("STATESEAL_ALLOW_CUSTOM_ENDPOINTS=1"),
            "{e}"
        );
        assert!(GcsConfig::from_vars(vars(Some("0"))).is_err());
        let e = GcsConfig::from_vars(vars(Some("yes")))
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected 1 or 0"), "{e}");
        assert!(GcsConfig::from_vars(vars(Some("1"))).is_ok());
        // Google's own hosts need no opt-in.
        let google = GcsConfig::from_vars(|k| {
            (k == "STATESEAL_GCS_ENDPOINT").then(|| "https://private.googleapis.com".to_owned())
        });
        assert!(google.is_ok());
    }
}
