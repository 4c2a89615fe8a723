//! One authenticated Vault client shared by the provider and the store: logs
//! in lazily, renews the token before it expires, logs in again when renewal
//! is impossible, and classifies every Vault failure.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use stateseal::Error;
use stateseal::provider::{ErrorClass, bounded_text, cause_chain, kms_error};
use tokio::sync::Mutex;
use vaultrs::client::{Client, VaultClient, VaultClientSettingsBuilder};
use vaultrs::error::ClientError;
use zeroize::Zeroize;

use crate::config::{VaultAuth, VaultConfig};

/// A logged-in client and when its token should be renewed.
struct Login {
    client: Arc<VaultClient>,
    /// `None`: the token does not expire (root or periodic tokens without a TTL).
    renew_at: Option<Instant>,
    renewable: bool,
    /// Renewals that failed transiently in a row (they back off, bounded).
    renew_failures: u32,
}

/// The wait before retrying a renewal that failed transiently: 0.5 s, doubling, at most 64 s.
fn renewal_backoff(failures: u32) -> Duration {
    Duration::from_millis(500u64 << failures.saturating_sub(1).min(7))
}

impl Login {
    fn due_at(&self, now: Instant) -> bool {
        self.renew_at.is_some_and(|t| now >= t)
    }
}

pub(crate) struct Session {
    config: Result<VaultConfig, String>,
    login: Mutex<Option<Login>>,
    logins: AtomicU64,
    renewals: AtomicU64,
}

/// How often a Vault session logged in and renewed its token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AuthStats {
    /// Successful logins (token lookups for token auth).
    pub logins: u64,
    /// Successful token renewals.
    pub renewals: u64,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let address = self.config.as_ref().map(VaultConfig::address);
        f.debug_struct("Session")
            .field("address", &address)
            .finish()
    }
}

/// The two fields of `auth/token/lookup-self` stateseal needs. (vaultrs'
/// own response type requires fields OpenBao omits for root tokens.)
#[derive(serde::Deserialize)]
struct TokenTtl {
    #[serde(default)]
    ttl: u64,
    #[serde(default)]
    renewable: bool,
}

struct LookupSelf;

impl rustify::Endpoint for LookupSelf {
    type Response = TokenTtl;
    const REQUEST_BODY_TYPE: rustify::enums::RequestType = rustify::enums::RequestType::JSON;
    const RESPONSE_BODY_TYPE: rustify::enums::ResponseType = rustify::enums::ResponseType::JSON;

    fn path(&self) -> String {
        "auth/token/lookup-self".into()
    }

    fn method(&self) -> rustify::enums::RequestMethod {
        rustify::enums::RequestMethod::GET
    }
}

/// When to renew a token that lives `ttl` seconds, renewing with `share` of it left.
fn renew_at(now: Instant, ttl: u64, share: f64) -> Option<Instant> {
    (ttl > 0).then(|| now + Duration::from_secs_f64(ttl as f64 * (1.0 - share)))
}

impl Session {
    pub(crate) fn new(config: Result<VaultConfig, Error>) -> Self {
        Self {
            config: config.map_err(|e| e.to_string()),
            login: Mutex::new(None),
            logins: AtomicU64::new(0),
            renewals: AtomicU64::new(0),
        }
    }

    pub(crate) fn stats(&self) -> AuthStats {
        AuthStats {
            logins: self.logins.load(Ordering::Relaxed),
            renewals: self.renewals.load(Ordering::Relaxed),
        }
    }

    fn config(&self, provider: &str) -> Result<&VaultConfig, Error> {
        self.config
            .as_ref()
            .map_err(|e| kms_error(provider, ErrorClass::Config, e.clone()))
    }

    fn client_with(config: &VaultConfig, token: &str) -> Result<VaultClient, ClientError> {
        let mut settings = VaultClientSettingsBuilder::default();
        settings
            .address(config.address())
            .token(token)
            .timeout(Some(config.timeout()))
            .verify(true)
            .ca_certs(
                config
                    .ca_cert()
                    .map(|p| p.display().to_string())
                    .into_iter()
                    .collect(),
            );
        if let Some(ns) = config.namespace() {
            settings.set_namespace(ns.to_owned());
        }
        // The builder only fails on an unparsable address, which VaultConfig already rejected.
        let settings = settings
            .build()
            .map_err(|_| ClientError::InvalidLoginMethodError)?;
        VaultClient::new(settings)
    }

    async fn login(&self, config: &VaultConfig) -> Result<Login, ClientError> {
        let now = Instant::now();
        match config.auth() {
            VaultAuth::Token(token) => {
                let client = Self::client_with(config, token.expose())?;
                let info = vaultrs::api::exec_with_result(&client, LookupSelf).await?;
                Ok(Login {
                    client: Arc::new(client),
                    renew_at: renew_at(now, info.ttl, config.renew_before()),
                    renewable: info.renewable,
                    renew_failures: 0,
                })
            }
            VaultAuth::AppRole {
                mount,
                role_id,
                secret_id,
            } => {
                // Read at every login: the file may hold a newer secret id than at start.
                let secret_id = secret_id.read().map_err(|e| ClientError::FileReadError {
                    source: e,
                    path: "the AppRole secret id file".into(),
                })?;
                let client = Self::client_with(config, "")?;
                let info =
                    vaultrs::auth::approle::login(&client, mount, role_id, secret_id.expose())
                        .await?;
                Ok(Self::logged_in(client, info, now, config))
            }
            VaultAuth::Kubernetes {
                mount,
                role,
                jwt_path,
            } => {
                let mut jwt =
                    std::fs::read_to_string(jwt_path).map_err(|e| ClientError::FileReadError {
                        source: e,
                        path: jwt_path.display().to_string(),
                    })?;
                let client = Self::client_with(config, "")?;
                let result =
                    vaultrs::auth::kubernetes::login(&client, mount, role, jwt.trim()).await;
                jwt.zeroize();
                Ok(Self::logged_in(client, result?, now, config))
            }
        }
    }

    fn logged_in(
        mut client: VaultClient,
        mut info: vaultrs::api::AuthInfo,
        now: Instant,
        config: &VaultConfig,
    ) -> Login {
        client.set_token(&info.client_token);
        info.client_token.zeroize();
        Login {
            client: Arc::new(client),
            renew_at: renew_at(now, info.lease_duration, config.renew_before()),
            renewable: info.renewable,
            renew_failures: 0,
        }
    }

    /// A client with a valid token: logs in on first use, renews when due,
    /// logs in again when the token cannot be renewed.
    async fn client(&self, provider: &str) -> Result<Arc<VaultClient>, Error> {
        let config = self.config(provider)?;
        let mut guard = self.login.lock().await;
        let now = Instant::now();
        if let Some(login) = guard.as_mut()
            && login.due_at(now)
        {
            let renewed = if login.renewable {
                Some(vaultrs::token::renew_self(&*login.client, None).await)
            } else {
                None
            };
            match renewed {
                Some(Ok(info)) => {
                    login.renew_at = renew_at(now, info.lease_duration, config.renew_before());
                    login.renew_failures = 0;
                    self.renewals.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(target: "stateseal::vault", "renewed the Vault token");
                }
                // Vault unreachable, sealed or overloaded: the token is still valid, so
                // keep it and try again soon, backing off.
                Some(Err(e)) if class_of(&e) == ErrorClass::Transient => {
                    login.renew_failures = login.renew_failures.saturating_add(1);
                    let wait = renewal_backoff(login.renew_failures);
                    login.renew_at = Some(now + wait);
                    tracing::warn!(target: "stateseal::vault", error = %classify(provider, "renew", &e), retry_in_ms = wait.as_millis() as u64, "the Vault token renewal failed; retrying");
                }
                // A definite refusal, or a token that cannot be renewed.
                _ if matches!(config.auth(), VaultAuth::Token(_)) => {
                    // Nothing to log in with: keep the token until Vault refuses it.
                    login.renew_at = None;
                    tracing::warn!(target: "stateseal::vault", "the Vault token could not be renewed; it will expire");
                }
                _ => *guard = None,
            }
        }
        if guard.is_none() {
            let login = self
                .login(config)
                .await
                .map_err(|e| classify(provider, "login", &e))?;
            tracing::info!(target: "stateseal::vault", method = config.auth().method(), "logged in to Vault");
            self.logins.fetch_add(1, Ordering::Relaxed);
            *guard = Some(login);
        }
        guard
            .as_ref()
            .map(|l| Arc::clone(&l.client))
            .ok_or_else(|| kms_error(provider, ErrorClass::Transient, "no Vault login"))
    }

    /// Runs `op` with a logged-in client. A 403 from a login-based method
    /// forgets the login and tries once more (the token may have been revoked
    /// or expired early); a second 403 is the answer.
    pub(crate) async fn call<T, F, Fut>(
        &self,
        provider: &str,
        what: &str,
        op: F,
    ) -> Result<T, CallError>
    where
        F: Fn(Arc<VaultClient>) -> Fut,
        Fut: Future<Output = Result<T, ClientError>>,
    {
        let client = self.client(provider).await.map_err(CallError::Setup)?;
        match op(client).await {
            Err(ClientError::APIError { code: 403, .. })
                if !matches!(
                    self.config(provider).map(VaultConfig::auth),
                    Ok(VaultAuth::Token(_))
                ) =>
            {
                *self.login.lock().await = None;
                tracing::warn!(target: "stateseal::vault", what, "Vault refused the token; logging in again");
                let client = self.client(provider).await.map_err(CallError::Setup)?;
                op(client).await.map_err(CallError::Vault)
            }
            other => other.map_err(CallError::Vault),
        }
    }
}

/// Why a [`Session::call`] failed: Vault answered with an error, or no call was possible.
#[derive(Debug)]
pub(crate) enum CallError {
    Vault(ClientError),
    Setup(Error),
}

impl CallError {
    pub(crate) fn into_error(self, provider: &str, what: &str) -> Error {
        match self {
            Self::Vault(e) => classify(provider, what, &e),
            Self::Setup(e) => e,
        }
    }
}

/// The first Vault error message, shortened; Vault's messages name paths and
/// causes, never key material.
fn vault_message(errors: &[String]) -> String {
    match errors.first().map(String::as_str) {
        None | Some("") => "no message".into(),
        Some(m) => bounded_text(m),
    }
}

/// Maps a Vault failure onto an [`ErrorClass`] (see the crate docs for the table).
pub(crate) fn class_of(e: &ClientError) -> ErrorClass {
    match e {
        ClientError::APIError { code, errors } => {
            let text = errors.join(" ").to_ascii_lowercase();
            match *code {
                403 => ErrorClass::Denied,
                404 => ErrorClass::Denied,
                400 if text.contains("not found") || text.contains("deleted") => ErrorClass::Denied,
                400 => ErrorClass::Invalid,
                // A check-and-set that lost a race: the next attempt may win.
                412 => ErrorClass::Transient,
                other => ErrorClass::of_http_status(other),
            }
        }
        ClientError::RestClientError { .. } | ClientError::ResponseEmptyError => {
            ErrorClass::Transient
        }
        ClientError::FileNotFoundError { .. }
        | ClientError::FileReadError { .. }
        | ClientError::ParseCertificateError { .. }
        | ClientError::RestClientBuildError { .. }
        | ClientError::InvalidLoginMethodError => ErrorClass::Config,
        _ => ErrorClass::Invalid,
    }
}

/// A [`ProviderError::Kms`](stateseal::ProviderError::Kms) for a failed Vault call: the operation, the class and Vault's own reason.
pub(crate) fn classify(provider: &str, what: &str, e: &ClientError) -> Error {
    let class = class_of(e);
    let detail = match e {
        ClientError::APIError { code, errors } => {
            format!("{what}: HTTP {code}: {}", vault_message(errors))
        }
        ClientError::RestClientError { source } => {
            // The chain names the failure (refused, timed out, bad response); never a header value.
            format!("{what}: cannot reach Vault ({})", cause_chain(source))
        }
        ClientError::FileReadError { path, source } => format!("{what}: read {path}: {source}"),
        other => format!("{what}: {other}"),
    };
    kms_error(provider, class, detail)
}

#[cfg(test)]
mod tests;
