//! Redis / Valkey as stateseal's replay store: where a fleet records the
//! single-use states it accepted, so a second presentation on any instance
//! is refused.
//!
//! One command per accepted single-use state: `SET <prefix><key> 1 NX PXAT
//! <keep_until in ms>`. `NX` makes it atomic across the fleet (exactly one
//! of two racing presentations sets the key); `PXAT` expires the record at an
//! absolute time, the state's expiry plus the skew allowance, so no clock of
//! this process is involved. Each instance keeps one multiplexed connection
//! (redis-rs' `ConnectionManager`, which reconnects by itself); nothing else
//! is coordinated.
//!
//! `rediss://` is TLS (rustls, the Web PKI roots, or your private CA with
//! [`RedisReplayStoreBuilder::ca_certificate_pem`]). With TLS the store sets
//! aws-lc as rustls' process-wide crypto provider unless the application set
//! one first.
//!
//! Every call has a deadline (default [`DEFAULT_DEADLINE`]): past it, or on
//! any error, the call fails and the boundary refuses the state (`replay
//! store unavailable`). Standalone servers and primaries are supported;
//! cluster mode is not (the client's cluster support needs a connection of
//! another type).
//!
//! ```no_run
//! use std::sync::Arc;
//! use std::time::Duration;
//! use stateseal_redis::RedisReplayStore;
//!
//! let store = RedisReplayStore::builder("rediss://replay.internal:6380/0")
//!     .key_prefix("stateseal:ks_example:")
//!     .deadline(Duration::from_millis(250))
//!     .build()?;
//! # Ok::<(), stateseal::Error>(())
//! ```
#![forbid(unsafe_code)]

use std::fmt;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use stateseal::replay::BoxFuture;
use stateseal::replay::ReplayStore;
use stateseal::{Error, SingleUse};
use tokio::sync::OnceCell;

/// How long one record may take, connecting included, before the state is refused.
pub const DEFAULT_DEADLINE: Duration = Duration::from_millis(250);

/// The key prefix when none is set.
pub const DEFAULT_KEY_PREFIX: &str = "stateseal:replay:";

/// A replay store on Redis or Valkey (`redis://` or `rediss://`).
pub struct RedisReplayStore {
    client: redis::Client,
    /// The URI without credentials, for logs and errors.
    shown: String,
    prefix: String,
    deadline: Duration,
    connection: OnceCell<ConnectionManager>,
}

impl fmt::Debug for RedisReplayStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisReplayStore")
            .field("uri", &self.shown)
            .field("prefix", &self.prefix)
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

/// Builds a [`RedisReplayStore`].
#[derive(Clone)]
#[must_use]
pub struct RedisReplayStoreBuilder {
    uri: String,
    prefix: String,
    deadline: Duration,
    ca_pem: Option<Vec<u8>>,
}

impl fmt::Debug for RedisReplayStoreBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisReplayStoreBuilder")
            .field("uri", &without_credentials(&self.uri))
            .field("prefix", &self.prefix)
            .field("deadline", &self.deadline)
            .field("ca_certificate", &self.ca_pem.is_some())
            .finish()
    }
}

impl RedisReplayStoreBuilder {
    /// For `rediss://`: trust only this CA (PEM) instead of the Web PKI
    /// roots, as for a private CA.
    pub fn ca_certificate_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.ca_pem = Some(pem.into());
        self
    }

    /// Prepended to every key: one per keyset (and per deployment sharing a
    /// server), so fleets never see each other's records. Default
    /// [`DEFAULT_KEY_PREFIX`].
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The longest one record may take (default [`DEFAULT_DEADLINE`]).
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// The store (no connection yet: the first record connects).
    ///
    /// # Errors
    /// [`Error::Config`] for a URI that is not `redis://` or `rediss://`, or
    /// that the client cannot parse, an empty prefix, or a zero deadline.
    pub fn build(self) -> Result<RedisReplayStore, Error> {
        let shown = without_credentials(&self.uri);
        if !(self.uri.starts_with("redis://") || self.uri.starts_with("rediss://")) {
            return Err(Error::Config(format!(
                "replay store {shown}: a Redis or Valkey URI starts with redis:// or rediss:// (TLS)"
            )));
        }
        if self.prefix.is_empty() {
            return Err(Error::Config(format!(
                "replay store {shown}: the key prefix may not be empty"
            )));
        }
        if self.deadline.is_zero() {
            return Err(Error::Config(format!(
                "replay store {shown}: the deadline must be above zero"
            )));
        }
        if self.uri.starts_with("rediss://") {
            // rustls picks no provider by itself when a build links two (aws-lc
            // and ring both are in most trees): set aws-lc unless the
            // application already chose one.
            let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        }
        // The client's message may quote the URI: never pass it on.
        let client = match self.ca_pem {
            Some(pem) => redis::Client::build_with_tls(
                self.uri.as_str(),
                redis::TlsCertificates {
                    client_tls: None,
                    root_cert: Some(pem),
                },
            ),
            None => redis::Client::open(self.uri.as_str()),
        };
        let client = client.map_err(|e| {
            Error::Config(format!(
                "replay store {shown}: not a usable Redis URI ({:?})",
                e.kind()
            ))
        })?;
        Ok(RedisReplayStore {
            client,
            shown,
            prefix: self.prefix,
            deadline: self.deadline,
            connection: OnceCell::new(),
        })
    }
}

impl RedisReplayStore {
    /// A builder for the store at `uri` (`redis://[user:password@]host[:port][/db]`,
    /// or `rediss://` for TLS).
    pub fn builder(uri: &str) -> RedisReplayStoreBuilder {
        RedisReplayStoreBuilder {
            uri: uri.to_owned(),
            prefix: DEFAULT_KEY_PREFIX.to_owned(),
            deadline: DEFAULT_DEADLINE,
            ca_pem: None,
        }
    }

    fn error(&self, problem: String) -> Error {
        Error::ReplayStore {
            uri: self.shown.clone(),
            problem,
        }
    }

    async fn record_now(&self, single_use: &SingleUse) -> Result<bool, Error> {
        let connection = self
            .connection
            .get_or_try_init(|| {
                // Each attempt bounded too: the manager's reconnects stay within the deadline.
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(self.deadline))
                    .set_response_timeout(Some(self.deadline))
                    .set_number_of_retries(1);
                ConnectionManager::new_with_config(self.client.clone(), config)
            })
            .await
            .map_err(|e| self.error(format!("connect: {:?}", e.kind())))?;
        let mut connection = connection.clone();
        let at_ms = (single_use.keep_until() * 1000.0).ceil() as u64;
        let set: Option<String> = redis::cmd("SET")
            .arg(format!("{}{}", self.prefix, single_use.key()))
            .arg(1)
            .arg("NX")
            .arg("PXAT")
            .arg(at_ms)
            .query_async(&mut connection)
            .await
            .map_err(|e| self.error(format!("SET NX: {:?}", e.kind())))?;
        Ok(set.is_some())
    }
}

impl ReplayStore for RedisReplayStore {
    fn record<'a>(&'a self, single_use: &'a SingleUse) -> BoxFuture<'a, Result<bool, Error>> {
        Box::pin(async move {
            match tokio::time::timeout(self.deadline, self.record_now(single_use)).await {
                Ok(result) => result,
                Err(_) => Err(self.error(format!(
                    "no answer within the deadline ({} ms)",
                    self.deadline.as_millis()
                ))),
            }
        })
    }

    fn uri(&self) -> &str {
        &self.shown
    }
}

/// Registers `redis://` and `rediss://` replay stores (each with the
/// default deadline and the key prefix the caller gives) in `registry`.
///
/// ```
/// let mut registry = stateseal::ProviderRegistry::with_defaults();
/// stateseal_redis::register(&mut registry);
/// assert!(registry.open_replay_store("redis://127.0.0.1:6379/0", "stateseal:ks_1:").is_ok());
/// ```
#[cfg(feature = "registry")]
pub fn register(registry: &mut stateseal::ProviderRegistry) {
    for scheme in ["redis", "rediss"] {
        registry.register_replay_store(scheme, |uri, prefix| {
            let store = RedisReplayStore::builder(uri).key_prefix(prefix).build()?;
            Ok(std::sync::Arc::new(store) as std::sync::Arc<dyn ReplayStore>)
        });
    }
}

/// `uri` with any `user:password@` removed.
fn without_credentials(uri: &str) -> String {
    match uri.split_once("://") {
        Some((scheme, rest)) => {
            let authority_end = rest.find('/').unwrap_or(rest.len());
            match rest[..authority_end].rfind('@') {
                Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
                None => uri.to_owned(),
            }
        }
        None => "<not a URI>".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_never_show() {
        assert_eq!(
            without_credentials("redis://:s3cret@host:6379/0"),
            "redis://host:6379/0"
        );
        assert_eq!(
            without_credentials("rediss://user:p%40ss@host/1"),
            "rediss://host/1"
        );
        assert_eq!(without_credentials("redis://host"), "redis://host");
        assert_eq!(without_credentials("s3cret"), "<not a URI>");
        let b = RedisReplayStore::builder("redis://:s3cret@host:6379/0");
        assert!(!format!("{b:?}").contains("s3cret"));
        let s = b.build().expect("store");
        assert!(!format!("{s:?}").contains("s3cret"));
        assert_eq!(s.uri(), "redis://host:6379/0");
    }

    #[test]
    fn bad_settings_are_refused_without_echoing_secrets() {
        let err = RedisReplayStore::builder("http://:s3cret@host")
            .build()
            .unwrap_err();
        assert!(err.to_string().contains("redis:// or rediss://"), "{err}");
        assert!(!err.to_string().contains("s3cret"), "{err}");
        let err = RedisReplayStore::builder("redis://h")
            .key_prefix("")
            .build()
            .unwrap_err();
        assert!(err.to_string().contains("prefix"), "{err}");
        let err = RedisReplayStore::builder("redis://h")
            .deadline(Duration::ZERO)
            .build()
            .unwrap_err();
        assert!(err.to_string().contains("deadline"), "{err}");
    }
}
