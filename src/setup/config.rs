//! The server author's configuration: a TOML file and/or `STATESEAL_*` variables.

use std::time::Duration;

use serde::Deserialize;

use super::seconds;
use crate::boundary::FailureMode;
use crate::cipher::aead::AeadBackend;
use crate::error::Error;
use crate::keyset::KeysetPins;
use crate::rotation::{SchedulerConfig, Timing, TrustPolicy};

/// Everything a server needs to protect `requestState` with a shared keyset.
///
/// Every field but `store` and `audience` has a default. Durations are
/// written in seconds (`ttl = 300`, `STATESEAL_TTL=0.5`) and held as
/// [`Duration`]s.
///
/// ```
/// use stateseal::setup::Config;
/// let config = Config::from_toml_str(r#"
///     store = "s3://my-bucket/stateseal/keyset.json"
///     audience = "my-server"
///     ttl = 300
///     keyset_id = "ks_4f3c2a1b0e9d8c7b"
///     keyset_keks = ["aws-kms://arn:aws:kms:eu-west-1:111122223333:key/"]
/// "#)?;
/// assert_eq!(config.ttl, std::time::Duration::from_secs(300));
/// // A shared store without pins is refused: writing the bucket must not choose the keys.
/// assert!(Config::from_toml_str("store = 's3://b/k'\naudience = 'a'").is_err());
/// assert!(Config::from_toml_str("store = 'file:///k.json'\naudience = 'a'\nttl = -1").is_err());
/// # Ok::<(), stateseal::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Config {
    /// Keyset store URI (`file://…`, or a provider crate's scheme).
    pub store: String,
    /// The service identity stamped into and required of every state (usually the server name).
    pub audience: String,
    /// KEK URI used when the store holds no keyset yet and `create_if_missing` is set.
    #[serde(default)]
    pub kek: Option<String>,
    /// Create the keyset under `kek` when the store is empty (development; default false).
    #[serde(default)]
    pub create_if_missing: bool,
    /// State lifetime T (default 600).
    #[serde(default = "defaults::ttl", deserialize_with = "seconds::ttl")]
    pub ttl: Duration,
    /// `"reject"` (default) or `"treat-as-absent"`.
    #[serde(default)]
    pub failure_mode: FailureModeName,
    /// Keyset refresh interval R (default 30).
    #[serde(
        default = "defaults::refresh_interval",
        deserialize_with = "seconds::refresh_interval"
    )]
    pub refresh_interval: Duration,
    /// Largest clock difference between instances S (default 60).
    #[serde(default = "defaults::max_skew", deserialize_with = "seconds::max_skew")]
    pub max_skew: Duration,
    /// Propagation window P (default 2R + S).
    #[serde(default, deserialize_with = "seconds::propagation")]
    pub propagation: Option<Duration>,
    /// Re-unwrap cached keys after this long (default 3600).
    #[serde(
        default = "defaults::max_key_age",
        deserialize_with = "seconds::max_key_age"
    )]
    pub max_key_age: Duration,
    /// Keep serving cached keys this long past `max_key_age` while the KMS is down (default 86400).
    #[serde(
        default = "defaults::outage_grace",
        deserialize_with = "seconds::outage_grace"
    )]
    pub outage_grace: Duration,
    /// Stop sealing (not ready; sealed states still verify) once the keyset
    /// store has been unusable this long (default: 2P, see
    /// `SchedulerConfig::store_staleness_limit`).
    #[serde(default, deserialize_with = "seconds::max_store_staleness")]
    pub max_store_staleness: Option<Duration>,
    /// Rotate the primary key at this age; `None` (0 in the file) never
    /// rotates by age (default 30 days).
    #[serde(
        default = "defaults::rotation_period",
        deserialize_with = "seconds::rotation_period"
    )]
    pub rotation_period: Option<Duration>,
    /// Rotate once the fleet has reserved this many seals under one key (default 2^31).
    #[serde(default = "defaults::max_seals_per_key")]
    pub max_seals_per_key: u64,
    /// Seals an instance reserves in the keyset at a time, at least (default 2^20; 0: off).
    #[serde(default = "defaults::seal_reservation_block")]
    pub seal_reservation_block: u64,
    /// How long start-up waits for the first key ring (default 10).
    #[serde(
        default = "defaults::ready_timeout",
        deserialize_with = "seconds::ready_timeout"
    )]
    pub ready_timeout: Duration,
    /// The keyset id this server accepts (`stateseal init` prints it); required,
    /// with `keyset_keks`, for every store but `file://`.
    #[serde(default)]
    pub keyset_id: Option<String>,
    /// The KEKs the keyset may use: full URIs, or prefixes ending in `/` that
    /// match whole path segments (environment: comma-separated).
    #[serde(default)]
    pub keyset_keks: Vec<String>,
    /// Refuse keyset documents below this generation (raise it after a
    /// compromise, as `stateseal rotate --now` says; default 0).
    #[serde(default)]
    pub min_generation: u64,
    /// Adopt unauthenticated `stateseal.keyset/v1` documents, with a warning at
    /// every refresh: for the migration window only (default false).
    #[serde(default)]
    pub accept_unauthenticated_keyset: bool,
    /// Renew the keyset (a write with the KEK) before it goes stale (default
    /// true; false for read-only servers, leaving it to the rotator).
    #[serde(default = "defaults::renew_keyset")]
    pub renew_keyset: bool,
    /// Where single-use states are recorded: `memory://` (this process
    /// only) or a registered replay store (`redis://`, `rediss://`,
    /// `redis-cluster://`, `rediss-cluster://`).
    #[serde(default)]
    pub replay_store: Option<String>,
    /// Tools, prompts and resources (by URI) whose states are single-use
    /// (each needs `replay_store`; environment: comma-separated).
    #[serde(default)]
    pub single_use_tools: Vec<String>,
    /// See `single_use_tools`.
    #[serde(default)]
    pub single_use_prompts: Vec<String>,
    /// See `single_use_tools`.
    #[serde(default)]
    pub single_use_resources: Vec<String>,
    /// The AES-256-GCM implementation: `auto` (the faster one for this CPU,
    /// the default), `aws-lc`, `ring` or `split` (ring below 4 KiB, aws-lc
    /// from there). Tokens are the same bytes whichever.
    #[serde(default)]
    pub aead: AeadName,
}

/// The AEAD backend as written in configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AeadName {
    /// The faster backend for this CPU ([`AeadBackend::for_this_cpu`]).
    #[default]
    Auto,
    /// aws-lc.
    AwsLc,
    /// ring.
    Ring,
    /// ring below 4 KiB, aws-lc from there.
    Split,
}

impl AeadName {
    /// The backend this names (`None`: the CPU's choice).
    pub fn backend(self) -> Option<AeadBackend> {
        match self {
            Self::Auto => None,
            Self::AwsLc => Some(AeadBackend::AwsLc),
            Self::Ring => Some(AeadBackend::Ring),
            Self::Split => Some(AeadBackend::Split),
        }
    }
}

/// The failure mode as written in configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureModeName {
    /// Refuse a bad echo with `-32602`.
    #[default]
    Reject,
    /// Run the handler as if no state was echoed.
    TreatAsAbsent,
}

impl From<FailureModeName> for FailureMode {
    fn from(n: FailureModeName) -> Self {
        match n {
            FailureModeName::Reject => Self::Reject,
            FailureModeName::TreatAsAbsent => Self::TreatAsAbsent,
        }
    }
}

/// Every default here is the scheduler's or the timeline's own: one home each.
mod defaults {
    use std::time::Duration;

    use crate::rotation::{SchedulerConfig, Timing};

    pub(super) fn ttl() -> Duration {
        Timing::default().ttl
    }
    pub(super) fn refresh_interval() -> Duration {
        Timing::default().refresh_interval
    }
    pub(super) fn max_skew() -> Duration {
        Timing::default().max_skew
    }
    pub(super) fn max_key_age() -> Duration {
        SchedulerConfig::default().max_key_age
    }
    pub(super) fn outage_grace() -> Duration {
        SchedulerConfig::default().outage_grace
    }
    pub(super) fn rotation_period() -> Option<Duration> {
        SchedulerConfig::default().rotation_period
    }
    pub(super) fn max_seals_per_key() -> u64 {
        SchedulerConfig::default().max_seals_per_key
    }
    pub(super) fn seal_reservation_block() -> u64 {
        SchedulerConfig::default()
            .seal_reservation_block
            .unwrap_or(0)
    }
    pub(super) fn ready_timeout() -> Duration {
        Duration::from_secs(10)
    }
    pub(super) fn renew_keyset() -> bool {
        true
    }
}

pub(super) fn field_error(e: &toml::de::Error) -> Error {
    let message = e.message().trim();
    // A duration's reader names its field already (`seconds`), in its check's words.
    if message.starts_with("field ") {
        return Error::Config(message.to_owned());
    }
    Error::Config(format!("configuration: {message}"))
}

impl Config {
    /// A builder for `store` and `audience`, every other field at its default.
    ///
    /// ```
    /// use std::time::Duration;
    /// use stateseal::setup::Config;
    /// let config = Config::builder("file:///var/lib/stateseal/keyset.json", "my-server")
    ///     .ttl(Duration::from_secs(300))
    ///     .refresh_interval(Duration::from_secs(10))
    ///     .build()?;
    /// assert_eq!(config.ttl, Duration::from_secs(300));
    /// assert!(Config::builder("file:///k.json", "a").ttl(Duration::ZERO).build().is_err());
    /// # Ok::<(), stateseal::Error>(())
    /// ```
    pub fn builder(store: impl Into<String>, audience: impl Into<String>) -> super::ConfigBuilder {
        super::ConfigBuilder::new(Self {
            store: store.into(),
            audience: audience.into(),
            kek: None,
            create_if_missing: false,
            ttl: defaults::ttl(),
            failure_mode: FailureModeName::default(),
            refresh_interval: defaults::refresh_interval(),
            max_skew: defaults::max_skew(),
            propagation: None,
            max_key_age: defaults::max_key_age(),
            outage_grace: defaults::outage_grace(),
            max_store_staleness: None,
            rotation_period: defaults::rotation_period(),
            max_seals_per_key: defaults::max_seals_per_key(),
            seal_reservation_block: defaults::seal_reservation_block(),
            ready_timeout: defaults::ready_timeout(),
            keyset_id: None,
            keyset_keks: Vec::new(),
            min_generation: 0,
            accept_unauthenticated_keyset: false,
            renew_keyset: defaults::renew_keyset(),
            replay_store: None,
            single_use_tools: Vec::new(),
            single_use_prompts: Vec::new(),
            single_use_resources: Vec::new(),
            aead: AeadName::default(),
        })
    }

    /// Parses and validates a TOML document.
    ///
    /// # Errors
    /// [`Error::Config`] naming the field (unknown fields are errors too).
    pub fn from_toml_str(text: &str) -> Result<Self, Error> {
        let config: Self = toml::from_str(text).map_err(|e| field_error(&e))?;
        config.validate()?;
        Ok(config)
    }

    /// The scheduler configuration these settings describe.
    pub fn scheduler_config(&self) -> SchedulerConfig {
        let mut timing = Timing::new(self.refresh_interval, self.max_skew, self.ttl);
        if let Some(p) = self.propagation {
            timing = timing.with_propagation(p);
        }
        // Validated with the rest of the configuration (`Config::validate`).
        SchedulerConfig {
            timing,
            max_key_age: self.max_key_age,
            outage_grace: self.outage_grace,
            max_store_staleness: self.max_store_staleness,
            rotation_period: self.rotation_period,
            max_seals_per_key: self.max_seals_per_key,
            seal_reservation_block: (self.seal_reservation_block > 0)
                .then_some(self.seal_reservation_block),
            // Invalid pins fail `validate`; unvalidated, a shared store then refuses to start.
            trust: self.trust_policy().unwrap_or_default(),
            renew_keyset: self.renew_keyset,
            ..SchedulerConfig::default()
        }
    }

    /// What keyset documents these settings believe.
    ///
    /// # Errors
    /// [`Error::Config`] naming `keyset_id` or `keyset_keks`.
    pub fn trust_policy(&self) -> Result<TrustPolicy, Error> {
        let pins = KeysetPins::from_parts(self.keyset_id.as_deref(), &self.keyset_keks)
            .map_err(|e| Error::Config(format!("keyset pins: {e}")))?;
        let policy = TrustPolicy {
            pins,
            accept_unauthenticated: self.accept_unauthenticated_keyset,
            min_generation: self.min_generation,
        };
        policy.check_for_store(&self.store).map_err(|e| match e {
            Error::Config(m) => Error::Config(format!("field `keyset_id`: {m}")),
            other => other,
        })?;
        Ok(policy)
    }

    /// Checks every field; the message names the one to fix.
    ///
    /// # Errors
    /// [`Error::Config`].
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |field: &str, what: &str| Err(Error::Config(format!("field `{field}`: {what}")));
        if crate::provider::scheme_of(&self.store).is_err() {
            return bad(
                "store",
                "must be a store URI such as file:///var/lib/stateseal/keyset.json",
            );
        }
        if self.audience.trim().is_empty() {
            return bad(
                "audience",
                "must name this service (usually the server's name)",
            );
        }
        if self.create_if_missing && self.kek.is_none() {
            return bad("kek", "is required when create_if_missing is set");
        }
        if self.ttl.is_zero() {
            return bad("ttl", "must be a positive number of seconds");
        }
        if self.ready_timeout.is_zero() {
            return bad("ready_timeout", "must be a positive number of seconds");
        }
        let single_use = !(self.single_use_tools.is_empty()
            && self.single_use_prompts.is_empty()
            && self.single_use_resources.is_empty());
        match &self.replay_store {
            // Every single-use state would be refused: say so at start.
            None if single_use => {
                return bad(
                    "replay_store",
                    "is required for single-use tools, prompts or resources (memory:// for one instance, redis://host:6379/0 for a fleet)",
                );
            }
            Some(uri)
                if uri != crate::provider::MEMORY_REPLAY_STORE
                    && crate::provider::scheme_of(uri).is_err() =>
            {
                return bad(
                    "replay_store",
                    "must be memory:// or a replay store URI such as redis://host:6379/0",
                );
            }
            _ => {}
        }
        self.trust_policy()?;
        // The scheduler's own checks name their fields too.
        self.scheduler_config().validate().map_err(|e| match e {
            Error::Config(m) => Error::Config(format!("field {m}")),
            other => other,
        })
    }
}
