//! Redis / Valkey as stateseal's replay store: where a fleet records the
//! single-use states it accepted, so a second presentation on any instance
//! is refused, and where losing records shows instead of reviving them.
//!
//! One script per accepted single-use state reads its bucket's *epoch* and
//! sets the record (`SET NX PX`, a random value per presentation) in the same
//! round trip: `NX` makes it atomic across the fleet; a missing epoch, or a
//! state issued before the epoch, is refused, so a server that restarted
//! empty, was flushed or failed over to a replica that lacked the epoch costs
//! the rounds in flight and never accepts a spent state (the layout is
//! described in the crate's `record` module). Every connection reads the eviction policy (`INFO memory`) when it
//! is made and every minute after, and refuses to record unless it is
//! `noeviction`. [`RedisReplayStoreBuilder::wait_replicas`] waits for replicas
//! (`WAIT`) before a record counts, so a failover cannot lose an acknowledged
//! one. A connection that died is made again and the record retried within the
//! same deadline.
//!
//! `rediss://` is TLS (rustls, the Web PKI roots, or your private CA with
//! [`RedisReplayStoreBuilder::ca_certificate_pem`]). With TLS the store sets
//! aws-lc as rustls' process-wide crypto provider unless the application set
//! one first.
//!
//! Every call has a deadline (default [`DEFAULT_DEADLINE`]): past it, or on
//! any error, the call fails and the boundary refuses the state (`replay
//! store unavailable`). Standalone servers and primaries (`redis://`,
//! `rediss://`) and Redis Cluster or Valkey cluster mode
//! (`redis-cluster://host:port,host:port/`, `rediss-cluster://`: the seed
//! nodes, credentials for every node) are supported; on a cluster every
//! guarantee holds per shard (each bucket's epoch lives in its records' slot,
//! every primary's eviction policy is read, `WAIT` goes to the record's shard).
//!
//! ```no_run
//! use std::sync::Arc;
//! use std::time::Duration;
//! use stateseal_redis::RedisReplayStore;
//!
//! let store = RedisReplayStore::builder("rediss://replay.internal:6380/0")
//!     .key_prefix("stateseal:ks_example:")
//!     .deadline(Duration::from_millis(250))
//!     .wait_replicas(1)
//!     .build()?;
//! # Ok::<(), stateseal::Error>(())
//! ```
#![forbid(unsafe_code)]

mod connection;
mod eviction;
mod link;
mod record;
mod uri;

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use stateseal::replay::{BoxFuture, Recorded, ReplayStore};
use stateseal::{Clock, Error, ProviderError, SingleUse, SystemClock};

use connection::Target;
use link::{Link, LinkError};
use record::{Attempt, Layout, Verdict};
use uri::{own_settings, without_credentials};

/// How long one record may take, connecting and retrying included, before the state is refused.
pub const DEFAULT_DEADLINE: Duration = Duration::from_millis(250);

/// The key prefix when none is set.
pub const DEFAULT_KEY_PREFIX: &str = "stateseal:replay:";

/// A replay store on Redis or Valkey (`redis://` or `rediss://`).
pub struct RedisReplayStore {
    link: Link,
    layout: Layout,
    /// The URI without credentials, for logs and errors.
    shown: String,
    deadline: Duration,
    wait_replicas: u32,
    clock: Arc<dyn Clock>,
}

impl fmt::Debug for RedisReplayStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisReplayStore")
            .field("uri", &self.shown)
            .field("prefix", &self.layout.prefix())
            .field("deadline", &self.deadline)
            .field("wait_replicas", &self.wait_replicas)
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
    wait_replicas: u32,
    clock: Arc<dyn Clock>,
}

impl fmt::Debug for RedisReplayStoreBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisReplayStoreBuilder")
            .field("uri", &without_credentials(&self.uri))
            .field("prefix", &self.prefix)
            .field("deadline", &self.deadline)
            .field("ca_certificate", &self.ca_pem.is_some())
            .field("wait_replicas", &self.wait_replicas)
            .finish_non_exhaustive()
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
    /// [`DEFAULT_KEY_PREFIX`]; no braces (the store's keys carry their own hash tag).
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The longest one record may take, a reconnect and a retry included
    /// (default [`DEFAULT_DEADLINE`]).
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// A record counts only once `replicas` replicas have it (`WAIT`, within
    /// the deadline); otherwise the state is refused. With asynchronous
    /// replication a failover loses the writes the new primary had not
    /// received: with this, none it acknowledged. Default 0 (the primary's
    /// word; see the operations guide for what each deployment gives).
    pub fn wait_replicas(mut self, replicas: u32) -> Self {
        self.wait_replicas = replicas;
        self
    }

    /// The clock for the epoch and the records' TTLs (default the system clock).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The store (no connection yet: [`ReplayStore::prepare`] or the first record connects).
    ///
    /// # Errors
    /// [`Error::Config`] for a URI that is not `redis://` or `rediss://`, or
    /// that the client cannot parse, an empty prefix or one with a brace, or
    /// a zero deadline.
    pub fn build(self) -> Result<RedisReplayStore, Error> {
        let shown = without_credentials(&self.uri);
        let config = |problem: String| Error::Config(format!("replay store {shown}: {problem}"));
        let Some(kind) = uri::Kind::of(&self.uri) else {
            return Err(config(
                "a Redis or Valkey URI starts with redis:// or rediss:// (TLS), or redis-cluster:// or rediss-cluster:// with the cluster's seed nodes".into(),
            ));
        };
        if self.prefix.is_empty() {
            return Err(config("the key prefix may not be empty".into()));
        }
        if self.prefix.contains(['{', '}']) {
            return Err(config(
                "the key prefix may not hold { or } (the store's keys carry their own hash tag)"
                    .into(),
            ));
        }
        if self.deadline.is_zero() {
            return Err(config("the deadline must be above zero".into()));
        }
        let (uri, from_uri) = own_settings(&self.uri).map_err(config)?;
        let wait_replicas = from_uri.unwrap_or(self.wait_replicas);
        if kind.tls() {
            // rustls picks no provider by itself when a build links two (aws-lc
            // and ring both are in most trees): set aws-lc unless the
            // application already chose one.
            let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        }
        let certificates = |pem: Vec<u8>| redis::TlsCertificates {
            client_tls: None,
            root_cert: Some(pem),
        };
        // Each command (and the connect) within half the deadline: a
        // connection that died silently leaves time to make another.
        let attempt = self.deadline / 2;
        // The client's message may quote the URI: never pass it on.
        let unusable =
            |e: redis::RedisError| config(format!("not a usable Redis URI ({:?})", e.kind()));
        let target = match kind {
            uri::Kind::Single { .. } => {
                let client = match self.ca_pem {
                    Some(pem) => redis::Client::build_with_tls(uri.as_str(), certificates(pem)),
                    None => redis::Client::open(uri.as_str()),
                }
                .map_err(unusable)?;
                let options = redis::AsyncConnectionConfig::new()
                    .set_connection_timeout(Some(attempt))
                    .set_response_timeout(Some(attempt));
                Target::Single(client, options)
            }
            uri::Kind::Cluster { .. } => {
                let seeds = uri::cluster_seeds(&uri).map_err(config)?;
                let mut builder = redis::cluster::ClusterClientBuilder::new(seeds)
                    .connection_timeout(attempt)
                    .response_timeout(attempt)
                    // MOVED, ASK and a failover's slot refresh, within the deadline.
                    .retries(3);
                if let Some(pem) = self.ca_pem {
                    builder = builder.certs(certificates(pem));
                }
                Target::Cluster(builder.build().map_err(unusable)?)
            }
        };
        Ok(RedisReplayStore {
            link: Link::new(target),
            layout: Layout::new(self.prefix),
            shown,
            deadline: self.deadline,
            wait_replicas,
            clock: self.clock,
        })
    }
}

impl RedisReplayStore {
    /// A builder for the store at `uri` (`redis://[user:password@]host[:port][/db]`,
    /// or `rediss://` for TLS). The query parameter `wait_replicas=N` sets
    /// [`RedisReplayStoreBuilder::wait_replicas`] (so a configuration's
    /// `replay_store` URI carries it); other parameters go to the client.
    pub fn builder(uri: &str) -> RedisReplayStoreBuilder {
        RedisReplayStoreBuilder {
            uri: uri.to_owned(),
            prefix: DEFAULT_KEY_PREFIX.to_owned(),
            deadline: DEFAULT_DEADLINE,
            ca_pem: None,
            wait_replicas: 0,
            clock: Arc::new(SystemClock),
        }
    }

    fn error(&self, problem: String) -> Error {
        Error::Provider(ProviderError::ReplayStore {
            uri: self.shown.clone(),
            problem,
        })
    }

    fn link_error(&self, e: LinkError) -> Error {
        match e {
            LinkError::Redis(step, e) => self.error(format!("{step}: {:?}", e.kind())),
            LinkError::Policy(problem) => self.error(problem),
        }
    }

    async fn record_now(&self, once: &SingleUse) -> Result<Recorded, Error> {
        let started = Instant::now();
        let instant = self.clock.now();
        if instant >= once.keep_until() {
            // No verifier accepts the state any more: nothing to keep.
            return Ok(Recorded::First);
        }
        let now = instant.as_secs_f64();
        let attempt = Attempt {
            now_ms: record::millis(now),
            floor_ms: record::millis((once.issued_at() - once.max_skew()).as_secs_f64()),
            // Not a secret: tells this presentation's write from another's.
            value: SingleUse::new_claim()?,
            ttl_ms: ((once.keep_until().as_secs_f64() - now) * 1000.0)
                .ceil()
                .max(1.0) as u64,
        };
        let mut tries = 0;
        let (verdict, mut conn) = loop {
            tries += 1;
            let mut conn = match self.link.get(&self.layout, now).await {
                Ok(conn) => conn,
                Err(LinkError::Redis(_, e)) if tries == 1 && record::is_connection_error(&e) => {
                    continue;
                }
                Err(e) => return Err(self.link_error(e)),
            };
            match self
                .layout
                .record(&mut conn.conn, once.key(), &attempt)
                .await
            {
                Ok(verdict) => break (verdict, conn),
                Err(e) if tries == 1 && record::is_connection_error(&e) => {
                    // Died since it was made (a restart, an idle cut): the
                    // same presentation again on a new one; if the first
                    // write landed, the script says it was ours.
                    self.link.drop_connection(conn.id).await;
                }
                Err(e) => {
                    if record::is_connection_error(&e) {
                        self.link.drop_connection(conn.id).await;
                    }
                    return Err(self.error(format!("record: {:?}", e.kind())));
                }
            }
        };
        match verdict {
            Verdict::Used => Ok(Recorded::Replay),
            Verdict::Before => Ok(Recorded::BeforeEpoch),
            Verdict::Lost => {
                // The other buckets lost theirs too: put them back now, so the
                // loss costs the states issued before it and no later one.
                if let Err(e) = self.layout.ensure_epochs(&mut conn.conn, now).await {
                    tracing::warn!(store = %self.shown, error = ?e.kind(), "could not put the replay store's epochs back");
                }
                tracing::warn!(
                    store = %self.shown,
                    "the replay store had lost an epoch (restarted empty, flushed or failed over): single-use states issued before now are refused"
                );
                Ok(Recorded::BeforeEpoch)
            }
            Verdict::New | Verdict::Mine => {
                self.wait_for_replicas(&mut conn.conn, once.key(), started)
                    .await?;
                Ok(Recorded::First)
            }
        }
    }

    /// `WAIT` for the configured replicas (of the record's shard) within
    /// what is left of the deadline.
    async fn wait_for_replicas(
        &self,
        conn: &mut connection::Connection,
        key: &str,
        started: Instant,
    ) -> Result<(), Error> {
        let wanted = self.wait_replicas;
        if wanted == 0 {
            return Ok(());
        }
        // Within what is left, and within one command's timeout (half the deadline).
        let left = self
            .deadline
            .saturating_sub(started.elapsed())
            .min(self.deadline / 2);
        let acked = conn
            .wait(&self.layout.record_key(key), wanted, left)
            .await
            .map_err(|e| {
                if e.is_timeout() {
                    self.error(
                        "no replica count within the deadline (WAIT timed out): refused, since a failover could lose the record"
                            .to_owned(),
                    )
                } else {
                    self.error(format!("WAIT: {:?}", e.kind()))
                }
            })?;
        if acked < u64::from(wanted) {
            return Err(self.error(format!(
                "the record reached {acked} of {wanted} replicas within the deadline: refused, since a failover could lose it"
            )));
        }
        Ok(())
    }
}

impl ReplayStore for RedisReplayStore {
    fn record<'a>(&'a self, single_use: &'a SingleUse) -> BoxFuture<'a, Result<Recorded, Error>> {
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

    fn prepare(&self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async move {
            let connected = async {
                self.link
                    .get(&self.layout, self.clock.now().as_secs_f64())
                    .await
                    .map(|_| ())
                    .map_err(|e| self.link_error(e))
            };
            match tokio::time::timeout(self.deadline, connected).await {
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

/// Registers `redis://`, `rediss://`, `redis-cluster://` and `rediss-cluster://` replay stores (each with the
/// default deadline and the key prefix the caller gives) in `registry`.
///
/// ```
/// let mut registry = stateseal::ProviderRegistry::with_defaults();
/// stateseal_redis::register(&mut registry);
/// assert!(registry.open_replay_store("redis://127.0.0.1:6379/0", "stateseal:ks_1:").is_ok());
/// ```
#[cfg(feature = "registry")]
pub fn register(registry: &mut stateseal::ProviderRegistry) {
    for scheme in ["redis", "rediss", "redis-cluster", "rediss-cluster"] {
        registry.register_replay_store(scheme, |uri, prefix| {
            let store = RedisReplayStore::builder(uri).key_prefix(prefix).build()?;
            Ok(std::sync::Arc::new(store) as std::sync::Arc<dyn ReplayStore>)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            .key_prefix("stateseal:{ks}:")
            .build()
            .unwrap_err();
        assert!(err.to_string().contains("may not hold {"), "{err}");
        let err = RedisReplayStore::builder("redis://h")
            .deadline(Duration::ZERO)
            .build()
            .unwrap_err();
        assert!(err.to_string().contains("deadline"), "{err}");
    }
}
