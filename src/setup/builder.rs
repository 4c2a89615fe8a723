//! [`ConfigBuilder`]: the server configuration built in code, validated as the
//! TOML and environment forms are.

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
        /// State lifetime T, seconds.
        ttl: f64,
        /// What a bad echo does.
        failure_mode: FailureModeName,
        /// Keyset refresh interval R, seconds.
        refresh_interval: f64,
        /// Largest clock difference between instances S, seconds.
        max_skew: f64,
        /// Propagation window P, seconds (`None`: 2R + S).
        propagation: Option<f64>,
        /// Re-unwrap cached keys after this long, seconds.
        max_key_age: f64,
        /// Serve cached keys this long past `max_key_age` while the KMS is down, seconds.
        outage_grace: f64,
        /// Not ready once the store has been unreadable this long (`None`: `outage_grace`).
        max_store_staleness: Option<f64>,
        /// Rotate the primary key at this age, seconds (0 disables).
        rotation_period: f64,
        /// Rotate once the fleet has reserved this many seals under one key.
        max_seals_per_key: u64,
        /// Seals an instance reserves at a time, at least (0: off).
        seal_reservation_block: u64,
        /// How long start-up waits for the first key ring, seconds.
        ready_timeout: f64,
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
