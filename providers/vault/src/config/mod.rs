//! Where the Vault server is and how stateseal logs in to it.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use stateseal::Error;
use zeroize::Zeroizing;

/// Default path of a Kubernetes service account token inside a pod.
pub const KUBERNETES_JWT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";

/// A secret string (token, AppRole secret id): zeroized on drop, redacted in `Debug`.
#[derive(Clone)]
pub struct SecretString(Zeroizing<String>);

impl SecretString {
    /// Wraps a secret string.
    pub fn new(s: impl Into<String>) -> Self {
        Self(Zeroizing::new(s.into()))
    }

    /// The secret itself, for the request that needs it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Where an AppRole secret id comes from.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum SecretId {
    /// A fixed value (it stops working when its `secret_id_ttl` ends).
    Value(SecretString),
    /// A file read afresh at every login, so whatever delivers secret ids
    /// (Vault Agent, a CSI driver, an operator's job) can rotate them under a
    /// running server. Trailing whitespace is ignored.
    File(PathBuf),
}

impl SecretId {
    /// The secret id now (the file's current contents for [`SecretId::File`]).
    pub(crate) fn read(&self) -> std::io::Result<SecretString> {
        match self {
            Self::Value(v) => Ok(v.clone()),
            Self::File(path) => {
                let text = Zeroizing::new(std::fs::read_to_string(path)?);
                Ok(SecretString::new(text.trim_end()))
            }
        }
    }
}

/// How stateseal authenticates to Vault.
#[derive(Clone)]
#[non_exhaustive]
pub enum VaultAuth {
    /// A token given by the operator (`VAULT_TOKEN`); renewed while renewable.
    Token(SecretString),
    /// AppRole login (`auth/<mount>/login`) with a role id and secret id.
    AppRole {
        /// Auth mount (default `approle`).
        mount: String,
        /// The role id (not secret on its own, but not logged either).
        role_id: String,
        /// The secret id, or the file to read it from at each login.
        secret_id: SecretId,
    },
    /// Kubernetes login with the pod's service account token, read from `jwt_path` at each login.
    Kubernetes {
        /// Auth mount (default `kubernetes`).
        mount: String,
        /// The Vault role bound to the service account.
        role: String,
        /// Where the service account JWT is mounted.
        jwt_path: PathBuf,
    },
}

impl fmt::Debug for VaultAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Token(_) => f.write_str("Token(<redacted>)"),
            Self::AppRole {
                mount, secret_id, ..
            } => f
                .debug_struct("AppRole")
                .field("mount", mount)
                .field("role_id", &"<redacted>")
                .field(
                    "secret_id",
                    match secret_id {
                        SecretId::Value(_) => &"<redacted>",
                        SecretId::File(path) => path,
                    },
                )
                .finish(),
            Self::Kubernetes {
                mount,
                role,
                jwt_path,
            } => f
                .debug_struct("Kubernetes")
                .field("mount", mount)
                .field("role", role)
                .field("jwt_path", jwt_path)
                .finish(),
        }
    }
}

impl VaultAuth {
    /// The method's name (`token`, `approle`, `kubernetes`), for messages.
    pub fn method(&self) -> &'static str {
        match self {
            Self::Token(_) => "token",
            Self::AppRole { .. } => "approle",
            Self::Kubernetes { .. } => "kubernetes",
        }
    }
}

/// Vault connection settings, built with [`VaultConfig::builder`] or [`VaultConfig::from_env`].
///
/// ```
/// use stateseal_vault::{SecretString, VaultAuth, VaultConfig};
/// let config = VaultConfig::builder("http://127.0.0.1:8200")
///     .auth(VaultAuth::Token(SecretString::new("s.example")))
///     .namespace("team-a")
///     .build()?;
/// assert_eq!(config.address(), "http://127.0.0.1:8200");
/// assert!(!format!("{config:?}").contains("s.example"));
/// # Ok::<(), stateseal::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct VaultConfig {
    address: String,
    auth: VaultAuth,
    namespace: Option<String>,
    ca_cert: Option<PathBuf>,
    timeout: Duration,
    renew_before: f64,
}

/// Builds a [`VaultConfig`].
#[derive(Debug, Clone)]
pub struct VaultConfigBuilder {
    address: String,
    auth: Option<VaultAuth>,
    namespace: Option<String>,
    ca_cert: Option<PathBuf>,
    timeout: Duration,
    renew_before: f64,
}

impl VaultConfig {
    /// Starts a configuration for the server at `address` (`http(s)://host:port`).
    pub fn builder(address: impl Into<String>) -> VaultConfigBuilder {
        VaultConfigBuilder {
            address: address.into(),
            auth: None,
            namespace: None,
            ca_cert: None,
            timeout: Duration::from_secs(10),
            renew_before: 1.0 / 3.0,
        }
    }

    /// Reads the standard variables: `VAULT_ADDR` (required), `VAULT_TOKEN`,
    /// `VAULT_NAMESPACE`, `VAULT_CACERT`, and for other auth methods
    /// `STATESEAL_VAULT_AUTH=approle|kubernetes` with
    /// `STATESEAL_VAULT_ROLE_ID`, `STATESEAL_VAULT_SECRET_ID` (or
    /// `STATESEAL_VAULT_SECRET_ID_FILE`), `STATESEAL_VAULT_ROLE`,
    /// `STATESEAL_VAULT_JWT_PATH` and `STATESEAL_VAULT_AUTH_MOUNT`.
    ///
    /// # Errors
    /// [`Error::Config`] naming the variable to set.
    pub fn from_env() -> Result<Self, Error> {
        Self::from_vars(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
    }

    /// [`VaultConfig::from_env`] over any variable source (tests pass a map).
    ///
    /// # Errors
    /// [`Error::Config`] naming the variable to set.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, Error> {
        let address = var("VAULT_ADDR").ok_or_else(|| {
            Error::Config("VAULT_ADDR is not set (the Vault server's address)".into())
        })?;
        let need = |k: &str, why: &str| {
            var(k).ok_or_else(|| Error::Config(format!("{k} is not set ({why})")))
        };
        let method = var("STATESEAL_VAULT_AUTH").unwrap_or_else(|| "token".into());
        let auth = match method.as_str() {
            "token" => VaultAuth::Token(SecretString::new(need(
                "VAULT_TOKEN",
                "token auth needs a Vault token",
            )?)),
            "approle" => {
                let secret_id = match var("STATESEAL_VAULT_SECRET_ID_FILE") {
                    Some(path) => {
                        // Read now to fail fast on a wrong path; read again at every login.
                        let source = SecretId::File(PathBuf::from(&path));
                        source.read().map_err(|e| {
                            Error::Config(format!("STATESEAL_VAULT_SECRET_ID_FILE {path}: {e}"))
                        })?;
                        source
                    }
                    None => SecretId::Value(SecretString::new(need(
                        "STATESEAL_VAULT_SECRET_ID",
                        "approle auth needs a secret id, or STATESEAL_VAULT_SECRET_ID_FILE",
                    )?)),
                };
                VaultAuth::AppRole {
                    mount: var("STATESEAL_VAULT_AUTH_MOUNT").unwrap_or_else(|| "approle".into()),
                    role_id: need("STATESEAL_VAULT_ROLE_ID", "approle auth needs a role id")?,
                    secret_id,
                }
            }
            "kubernetes" => VaultAuth::Kubernetes {
                mount: var("STATESEAL_VAULT_AUTH_MOUNT").unwrap_or_else(|| "kubernetes".into()),
                role: need("STATESEAL_VAULT_ROLE", "kubernetes auth needs a Vault role")?,
                jwt_path: var("STATESEAL_VAULT_JWT_PATH")
                    .map_or_else(|| PathBuf::from(KUBERNETES_JWT_PATH), PathBuf::from),
            },
            // Not repeated: a token set here by mistake would end up in logs.
            _ => {
                return Err(Error::Config(
                    "STATESEAL_VAULT_AUTH: expected token, approle or kubernetes (the value given is not repeated here; a token goes in VAULT_TOKEN)".into(),
                ));
            }
        };
        let mut b = Self::builder(address).auth(auth);
        if let Some(ns) = var("VAULT_NAMESPACE") {
            b = b.namespace(ns);
        }
        if let Some(ca) = var("VAULT_CACERT") {
            b = b.ca_cert(ca);
        }
        b.build()
    }

    /// The server address.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The auth method.
    pub fn auth(&self) -> &VaultAuth {
        &self.auth
    }

    /// The Vault Enterprise / OpenBao namespace, if any.
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// A PEM CA certificate to trust.
    pub fn ca_cert(&self) -> Option<&std::path::Path> {
        self.ca_cert.as_deref()
    }

    /// Timeout of each request.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The share of a token's lifetime left at which it is renewed (or logged in again).
    pub fn renew_before(&self) -> f64 {
        self.renew_before
    }
}

impl VaultConfigBuilder {
    /// The auth method (required).
    #[must_use]
    pub fn auth(mut self, auth: VaultAuth) -> Self {
        self.auth = Some(auth);
        self
    }

    /// A namespace (sent as `X-Vault-Namespace`).
    #[must_use]
    pub fn namespace(mut self, ns: impl Into<String>) -> Self {
        self.namespace = Some(ns.into());
        self
    }

    /// A PEM CA certificate file to trust for TLS.
    #[must_use]
    pub fn ca_cert(mut self, path: impl Into<PathBuf>) -> Self {
        self.ca_cert = Some(path.into());
        self
    }

    /// Timeout of each request (default 10 s).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Renew (or log in again) when less than this share of the token's
    /// lifetime is left (default 1/3).
    #[must_use]
    pub fn renew_before(mut self, share: f64) -> Self {
        self.renew_before = share;
        self
    }

    /// Checks and builds the configuration.
    ///
    /// # Errors
    /// [`Error::Config`] for a missing auth method, an address that is neither
    /// `https://…` nor `http://` to a loopback address, an empty role or
    /// mount, or a renewal share outside (0, 1).
    pub fn build(self) -> Result<VaultConfig, Error> {
        let auth = self
            .auth
            .ok_or_else(|| Error::Config("vault: an auth method is required".into()))?;
        let rest = self
            .address
            .strip_prefix("https://")
            .or_else(|| self.address.strip_prefix("http://"));
        if rest.is_none_or(|r| r.is_empty() || r.contains(char::is_whitespace)) {
            return Err(Error::Config(format!(
                "vault address {:?} must look like http(s)://host:port",
                self.address
            )));
        }
        // Tokens, secret ids and transit's plaintext data keys travel over this connection.
        stateseal::provider::check_endpoint("vault", &self.address)?;
        let empty = match &auth {
            VaultAuth::Token(t) => t.expose().is_empty().then_some("token"),
            VaultAuth::AppRole { mount, role_id, .. } => {
                (mount.is_empty() || role_id.is_empty()).then_some("approle mount and role id")
            }
            VaultAuth::Kubernetes { mount, role, .. } => {
                (mount.is_empty() || role.is_empty()).then_some("kubernetes mount and role")
            }
        };
        if let Some(what) = empty {
            return Err(Error::Config(format!(
                "vault: the {what} must not be empty"
            )));
        }
        if !(self.renew_before > 0.0 && self.renew_before < 1.0) {
            return Err(Error::Config(
                "vault: renew_before must be between 0 and 1".into(),
            ));
        }
        if self.timeout.is_zero() {
            return Err(Error::Config("vault: the timeout must be positive".into()));
        }
        Ok(VaultConfig {
            address: self.address.trim_end_matches('/').to_owned(),
            auth,
            namespace: self.namespace.filter(|n| !n.is_empty()),
            ca_cert: self.ca_cert,
            timeout: self.timeout,
            renew_before: self.renew_before,
        })
    }
}

#[cfg(test)]
mod tests;
