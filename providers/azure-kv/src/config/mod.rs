//! Where the Managed HSM is reached, with which credential, and how hard to retry.

use std::path::PathBuf;
use std::time::Duration;

use stateseal::Error;
use stateseal::provider::{custom_endpoints_allowed, is_loopback_http};

/// Which Azure credential signs requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AzureCredentialKind {
    /// Azure's default order: environment (client secret), workload identity,
    /// managed identity, then the Azure CLI; the first one configured.
    Default,
    /// `AZURE_TENANT_ID`, `AZURE_CLIENT_ID`, `AZURE_CLIENT_SECRET`.
    Environment,
    /// AKS workload identity (`AZURE_FEDERATED_TOKEN_FILE`, `AZURE_CLIENT_ID`, `AZURE_TENANT_ID`).
    WorkloadIdentity,
    /// The VM's, App Service's or pod's managed identity (`AZURE_CLIENT_ID` picks a user-assigned one).
    ManagedIdentity,
    /// `az account get-access-token`, for an operator's workstation.
    AzureCli,
    /// A fixed placeholder token, for a loopback test double only.
    Anonymous,
}

impl AzureCredentialKind {
    fn parse(v: &str) -> Option<Self> {
        Some(match v {
            "default" => Self::Default,
            "environment" => Self::Environment,
            "workload-identity" => Self::WorkloadIdentity,
            "managed-identity" => Self::ManagedIdentity,
            "cli" => Self::AzureCli,
            "anonymous" => Self::Anonymous,
            _ => return None,
        })
    }
}

/// Settings of the Azure Managed HSM provider, built with
/// [`AzureKvConfig::builder`] or [`AzureKvConfig::from_env`].
///
/// ```
/// use stateseal_azure_kv::{AzureCredentialKind, AzureKvConfig};
/// let config = AzureKvConfig::builder()
///     .endpoint("https://127.0.0.1:8443")
///     .credential(AzureCredentialKind::Anonymous)
///     .build()?;
/// assert_eq!(config.endpoint(), Some("https://127.0.0.1:8443"));
/// # Ok::<(), stateseal::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct AzureKvConfig {
    endpoint: Option<String>,
    allow_custom_endpoint: bool,
    credential: AzureCredentialKind,
    ca_file: Option<PathBuf>,
    attempt_timeout: Duration,
    max_attempts: u32,
}

/// Builds an [`AzureKvConfig`].
#[derive(Debug, Clone)]
pub struct AzureKvConfigBuilder(AzureKvConfig);

impl Default for AzureKvConfig {
    fn default() -> Self {
        Self {
            endpoint: None,
            allow_custom_endpoint: false,
            credential: AzureCredentialKind::Default,
            ca_file: None,
            attempt_timeout: Duration::from_secs(5),
            max_attempts: 3,
        }
    }
}

/// Hosts a Managed HSM is served from (public and sovereign clouds).
const HSM_SUFFIXES: [&str; 3] = [
    ".managedhsm.azure.net",
    ".managedhsm.azure.cn",
    ".managedhsm.usgovcloudapi.net",
];

fn authority(url: &str) -> Option<&str> {
    let rest = url.strip_prefix("https://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    (!authority.is_empty() && !authority.contains('@')).then_some(authority)
}

/// Whether `url` is `https://` to a loopback IP literal (the SDK sends bearer
/// tokens over TLS only): the host rules of [`is_loopback_http`], over TLS.
pub(crate) fn is_loopback_https(url: &str) -> bool {
    url.strip_prefix("https://")
        .is_some_and(|rest| is_loopback_http(&format!("http://{rest}")))
}

impl AzureKvConfig {
    /// Defaults: the HSM named in each KEK URI, Azure's default credential
    /// order, 5 s per attempt, 3 attempts.
    pub fn builder() -> AzureKvConfigBuilder {
        AzureKvConfigBuilder(Self::default())
    }

    /// Reads `STATESEAL_AZURE_KV_ENDPOINT` (an endpoint override: loopback or
    /// a `*.managedhsm.azure.net` host unless `STATESEAL_ALLOW_CUSTOM_ENDPOINTS=1`),
    /// `STATESEAL_AZURE_CREDENTIALS` (`default`, `environment`,
    /// `workload-identity`, `managed-identity`, `cli`, or `anonymous` for a
    /// loopback test double) and `STATESEAL_AZURE_KV_CA_FILE` (a PEM bundle of
    /// extra roots, for a TLS-inspecting proxy or a local double).
    ///
    /// # Errors
    /// [`Error::Config`] naming the variable.
    pub fn from_env() -> Result<Self, Error> {
        Self::from_vars(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
    }

    /// [`AzureKvConfig::from_env`] over any variable source.
    ///
    /// # Errors
    /// [`Error::Config`] naming the variable.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, Error> {
        let mut b = Self::builder();
        if let Some(e) = var("STATESEAL_AZURE_KV_ENDPOINT") {
            b = b.endpoint(e);
        }
        b = b.allow_custom_endpoint(custom_endpoints_allowed(&var)?);
        if let Some(c) = var("STATESEAL_AZURE_CREDENTIALS") {
            let kind = AzureCredentialKind::parse(&c).ok_or_else(|| {
                Error::Config(format!(
                    "STATESEAL_AZURE_CREDENTIALS={c:?}: expected default, environment, workload-identity, managed-identity, cli or anonymous"
                ))
            })?;
            b = b.credential(kind);
        }
        if let Some(f) = var("STATESEAL_AZURE_KV_CA_FILE") {
            b = b.ca_file(f);
        }
        b.build()
    }

    /// The endpoint override, if any.
    pub fn endpoint(&self) -> Option<&str> {
        self.endpoint.as_deref()
    }

    /// The credential kind.
    pub fn credential(&self) -> AzureCredentialKind {
        self.credential
    }

    /// Extra trusted roots (PEM), if any.
    pub fn ca_file(&self) -> Option<&std::path::Path> {
        self.ca_file.as_deref()
    }

    /// Where requests for the HSM `host` (from a KEK URI) go: the override,
    /// else `https://<host>` when it is a Managed HSM host (or custom hosts are
    /// allowed), since every request carries the HSM's token and a wrap
    /// carries a plaintext data key.
    ///
    /// # Errors
    /// [`Error::Config`] for any other host, naming the opt-in.
    pub(crate) fn endpoint_for(&self, host: &str) -> Result<String, Error> {
        if let Some(e) = &self.endpoint {
            return Ok(e.clone());
        }
        if HSM_SUFFIXES.iter().any(|s| host.ends_with(s)) || self.allow_custom_endpoint {
            return Ok(format!("https://{host}"));
        }
        Err(Error::Config(format!(
            "azure-kv: {host:?} is not a Managed HSM host (*.managedhsm.azure.net), and it would receive the HSM's token and plaintext data keys; set {}=1 if you mean it",
            stateseal::provider::ALLOW_CUSTOM_ENDPOINTS_VAR
        )))
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

impl AzureKvConfigBuilder {
    /// Sends requests to this `https://` endpoint instead of the HSM in the URI.
    #[must_use]
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.0.endpoint = Some(url.into());
        self
    }

    /// Allows an endpoint override outside the Managed HSM domains (it
    /// receives the HSM's bearer token and, on wrap, plaintext data keys); default false.
    #[must_use]
    pub fn allow_custom_endpoint(mut self, yes: bool) -> Self {
        self.0.allow_custom_endpoint = yes;
        self
    }

    /// The credential kind (default [`AzureCredentialKind::Default`]).
    #[must_use]
    pub fn credential(mut self, kind: AzureCredentialKind) -> Self {
        self.0.credential = kind;
        self
    }

    /// Trusts the roots in this PEM file besides the platform's.
    #[must_use]
    pub fn ca_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.0.ca_file = Some(path.into());
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
    /// [`Error::Config`] for an endpoint that is not `https://` (the Azure SDK
    /// sends tokens over TLS only), a custom host without the opt-in,
    /// anonymous credentials anywhere but a loopback endpoint, or zero
    /// attempts or timeout.
    pub fn build(self) -> Result<AzureKvConfig, Error> {
        let c = self.0;
        if let Some(e) = &c.endpoint {
            let Some(authority) = authority(e) else {
                return Err(Error::Config(format!(
                    "azure-kv: endpoint {e:?} must be https://host[:port] (the Azure SDK sends bearer tokens over TLS only)"
                )));
            };
            let host = authority
                .split(':')
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase();
            let known = HSM_SUFFIXES.iter().any(|s| host.ends_with(s));
            if !(known || is_loopback_https(e) || c.allow_custom_endpoint) {
                return Err(Error::Config(format!(
                    "azure-kv: endpoint {e:?} is not a Managed HSM host, and it would receive the HSM's token and plaintext data keys; set {}=1 if you mean it",
                    stateseal::provider::ALLOW_CUSTOM_ENDPOINTS_VAR
                )));
            }
        }
        if c.credential == AzureCredentialKind::Anonymous
            && !c.endpoint.as_deref().is_some_and(is_loopback_https)
        {
            return Err(Error::Config(
                "azure-kv: anonymous credentials need a loopback endpoint override (STATESEAL_AZURE_KV_ENDPOINT=https://127.0.0.1:PORT)".into(),
            ));
        }
        if c.max_attempts == 0 || c.max_attempts > 10 || c.attempt_timeout.is_zero() {
            return Err(Error::Config(
                "azure-kv: max_attempts must be 1..=10 and the attempt timeout positive".into(),
            ));
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests;
