//! [`ConfigBuilder`]: the server configuration built in code, validated as the
//! TOML and environment forms are.

use std::time::Duration;

use super::config::{AeadName, Config, FailureModeName};
use crate::error::Error;

/// Builds a validated [`Config`]; start with [`Config::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct ConfigBuilder(Config);

/// One setter per field, each documented as the field is.
macro_rules! setters {
    ($($(#[$doc:meta])* $field:ident: $ty:ty),* $(,)?) => {
        $(
            $(#[$doc])*
            pub fn $field(mut self, value: $ty) -> Self {
                self.0.$field = value;
                self
            }
        )*
    };
}

impl ConfigBuilder {
    pub(super) fn new(config: Config) -> Self {
        Self(config)
    }

    setters! {
        /// KEK URI for creating the keyset when the store is empty.
        kek: Option<String>,
        /// Create the keyset under `kek` when the store is empty (development).
        create_if_missing: bool,
        /// State lifetime T.
        ttl: Duration,
        /// What a bad echo does.
        failure_mode: FailureModeName,
        /// Keyset refresh interval R.
        refresh_interval: Duration,
        /// Largest clock difference between instances S.
        max_skew: Duration,
        /// Propagation window P (`None`: 2R + S).
        propagation: Option<Duration>,
        /// Re-unwrap cached keys after this long.
        max_key_age: Duration,
        /// Serve cached keys this long past `max_key_age` while the KMS is down.
        outage_grace: Duration,
        /// Not ready once the store has been unreadable this long (`None`: 2P).
        max_store_staleness: Option<Duration>,
        /// Rotate the primary key at this age (`None`: never by age).
        rotation_period: Option<Duration>,
        /// Rotate once the fleet has reserved this many seals under one key.
        max_seals_per_key: u64,
        /// Seals an instance reserves at a time, at least (0: off).
        seal_reservation_block: u64,
        /// How long start-up waits for the first key ring.
        ready_timeout: Duration,
        /// The keyset id this server accepts.
        keyset_id: Option<String>,
        /// The KEKs the keyset may use (full URIs or `/`-terminated prefixes).
        keyset_keks: Vec<String>,
        /// Refuse keyset documents below this generation.
        min_generation: u64,
        /// Adopt unauthenticated `stateseal.keyset/v1` documents (migration only).
        accept_unauthenticated_keyset: bool,
        /// Renew the keyset before it goes stale (false: read-only server).
        renew_keyset: bool,
        /// Where single-use states are recorded (`memory://`, `redis://…`).
        replay_store: Option<String>,
        /// Tools whose states are single-use.
        single_use_tools: Vec<String>,
        /// Prompts whose states are single-use.
        single_use_prompts: Vec<String>,
        /// Resources (by URI) whose states are single-use.
        single_use_resources: Vec<String>,
        /// The AES-256-GCM implementation (`Auto`: the faster one for this CPU).
        aead: AeadName,
    }

    /// The configuration, once every field is valid.
    ///
    /// # Errors
    /// [`Error::Config`] naming the field to fix.
    pub fn build(self) -> Result<Config, Error> {
        self.0.validate()?;
        Ok(self.0)
    }
}
