//! Keyset commands: `init`, `rotate`, `revoke`, `status`, `check`, `keyset show`. Each
//! parses and validates its flags, calls the library's keyset operations, and
//! prints; none computes a ring itself.

use std::time::Duration;
mod due;
mod init;
mod inspect;
mod revoke;
mod rewrite;
mod rotate;

use std::sync::Arc;

use clap::{Args, Subcommand};
use stateseal::keyset::KeysetPins;
use stateseal::rotation::{KeysetTrust, Timing, TrustPolicy, VerifiedKeyset};
use stateseal::{Clock, KeysetStore, ProviderRegistry, StoredKeyset, SystemClock};

use crate::error::CliError;
use crate::flag_values::{instant, parse_seconds};

pub(crate) use init::{InitArgs, init};
pub(crate) use inspect::{CheckArgs, ShowArgs, StatusArgs, check, show, status};
pub(crate) use revoke::{RevokeArgs, revoke};
pub(crate) use rewrite::{RenewArgs, UpgradeArgs, renew, upgrade};
pub(crate) use rotate::{RotateArgs, rotate};

/// `stateseal keyset …`: the document itself.
#[derive(Debug, Subcommand)]
pub(crate) enum KeysetCmd {
    /// Print the keyset document (ids, timing, entries, timeline), verified, without unwrapping any data key.
    #[command(
        after_help = "Examples:\n  stateseal keyset show --store file:///var/lib/stateseal/keyset.json\n  STATESEAL_STORE=s3://bucket/keyset.json stateseal keyset show --json"
    )]
    Show(ShowArgs),
    /// Convert an unauthenticated stateseal.keyset/v1 document to v2 (one way; every key proven).
    Upgrade(UpgradeArgs),
    /// Write the document again, fresh for another validity period, nothing else changed.
    Renew(RenewArgs),
}

/// Set to `1` to use `local://` KEKs with a store other than `file://`.
pub(crate) const ALLOW_LOCAL_KEK_VAR: &str = "STATESEAL_ALLOW_LOCAL_KEK";

/// Whether the CLI accepts `local://` KEKs for the keyset in `store`: a
/// development keyset in a `file://` store, or with [`ALLOW_LOCAL_KEK_VAR`]
/// set to `1`. A shared store's keyset under a KEK file on one machine is a
/// mistake the servers would refuse anyway (they need `allow_local_kek`).
pub(crate) fn local_kek_allowed(store: &str) -> bool {
    stateseal::provider::scheme_of(store).is_ok_and(|s| s == "file")
        || std::env::var(ALLOW_LOCAL_KEK_VAR).is_ok_and(|v| v == "1")
}

/// The registry the CLI resolves KEK and store URIs with for the keyset in
/// `store`: the embedded `file` (and `local`, see [`local_kek_allowed`]) plus
/// every provider crate, configured from the environment (a provider's
/// configuration error surfaces only when a URI names it).
pub(crate) fn registry(store: &str) -> ProviderRegistry {
    stateseal_providers::registry_from_env(local_kek_allowed(store))
}

/// `--store`, with `STATESEAL_STORE` as its default, and what the CLI trusts
/// in it (the servers' `keyset_id`, `keyset_keks`, `min_generation`).
#[derive(Debug, Args, Clone)]
pub(crate) struct StoreArg {
    /// Keyset store URI: file:///PATH, vault-kv://…, s3://BUCKET/KEY, gs://BUCKET/OBJECT, az-blob://ACCOUNT/CONTAINER/BLOB.
    #[arg(
        long,
        env = "STATESEAL_STORE",
        hide_env_values = true,
        value_name = "URI"
    )]
    pub(crate) store: String,
    #[command(flatten)]
    pub(crate) trust: TrustArgs,
}

/// The pins a keyset document is checked against before anything it says is
/// used (required for every store but file://; `stateseal init` prints them).
#[derive(Debug, Args, Clone, Default)]
#[group(id = "trust", required = false, multiple = true)]
pub(crate) struct TrustArgs {
    /// The keyset id the store must hold (ks_…).
    #[arg(long = "keyset-id", env = "STATESEAL_KEYSET_ID", value_name = "ID")]
    pub(crate) keyset_id: Option<String>,
    /// A KEK the keyset may use: a full URI, or a prefix ending in / (repeat, or comma-separate).
    #[arg(
        long = "kek-pin",
        env = "STATESEAL_KEYSET_KEKS",
        value_delimiter = ',',
        value_name = "URI"
    )]
    pub(crate) kek_pins: Vec<String>,
    /// Refuse documents below this generation (a restored pre-compromise backup).
    #[arg(
        long = "min-generation",
        env = "STATESEAL_MIN_GENERATION",
        default_value_t = 0,
        value_name = "N"
    )]
    pub(crate) min_generation: u64,
    /// Read an unauthenticated stateseal.keyset/v1 document (migration only).
    #[arg(long = "accept-unauthenticated")]
    pub(crate) accept_unauthenticated: bool,
}

impl TrustArgs {
    /// The policy these flags describe, for `store_uri`.
    pub(crate) fn policy(&self, store_uri: &str) -> Result<TrustPolicy, CliError> {
        let pins =
            KeysetPins::from_parts(self.keyset_id.as_deref(), &self.kek_pins).map_err(|e| {
                CliError::Usage(format!(
                    "--keyset-id / --kek-pin (STATESEAL_KEYSET_ID / STATESEAL_KEYSET_KEKS): {}",
                    e.to_string().trim_start_matches("invalid configuration: ")
                ))
            })?;
        registry(store_uri)
            .check_keks(&self.kek_pins)
            .map_err(|e| CliError::Usage(format!("--kek-pin (STATESEAL_KEYSET_KEKS): {e}")))?;
        let policy = TrustPolicy {
            pins,
            accept_unauthenticated: self.accept_unauthenticated,
            min_generation: self.min_generation,
        };
        if let Err(
            stateseal::Error::Config(m)
            | stateseal::Error::Provider(stateseal::ProviderError::InvalidUri { problem: m, .. }),
        ) = policy.check_for_store(store_uri)
        {
            return Err(CliError::Usage(format!(
                "{m}; pass --keyset-id and --kek-pin (or STATESEAL_KEYSET_ID and STATESEAL_KEYSET_KEKS)"
            )));
        }
        Ok(policy)
    }
}

impl StoreArg {
    pub(crate) fn open(&self) -> Result<Arc<dyn KeysetStore>, CliError> {
        registry(&self.store)
            .open_store(&self.store)
            .map_err(|e| CliError::Usage(format!("--store: {e}")))
    }

    /// The store and the trust its documents are checked under.
    pub(crate) fn open_trusted(&self) -> Result<(Arc<dyn KeysetStore>, KeysetTrust), CliError> {
        let store = self.open()?;
        let policy = self.trust.policy(store.uri())?;
        Ok((store, KeysetTrust::new(policy)))
    }
}

/// The document in `store` as stored, or an error that says how to create one.
pub(crate) async fn load(store: &dyn KeysetStore) -> Result<StoredKeyset, CliError> {
    store.load().await.map_err(CliError::from)?.ok_or_else(|| {
        CliError::Usage(format!(
            "no keyset at {}; create one with `stateseal init --kek URI --store {}`",
            store.uri(),
            store.uri()
        ))
    })
}

/// The document in `store`, verified under `trust` (freshness at `now`, or
/// not checked with `None`): a refusal exits 1 naming its reason.
pub(crate) async fn load_verified(
    store: &dyn KeysetStore,
    registry: &ProviderRegistry,
    trust: &KeysetTrust,
    now: Option<f64>,
) -> Result<VerifiedKeyset, CliError> {
    open_stored(store, registry, trust, now)
        .await?
        .map_err(CliError::from)
}

/// The document in `store` (missing: a usage error) and the verification's
/// own result, for callers that answer some failures differently.
pub(crate) async fn open_stored(
    store: &dyn KeysetStore,
    registry: &ProviderRegistry,
    trust: &KeysetTrust,
    now: Option<f64>,
) -> Result<Result<VerifiedKeyset, stateseal::Error>, CliError> {
    let stored = load(store).await?;
    Ok(match now {
        Some(now) => {
            trust
                .open(registry, store.uri(), &stored, instant(now)?)
                .await
        }
        None => {
            trust
                .open_ignoring_expiry(registry, store.uri(), &stored)
                .await
        }
    })
}

/// The timing profile flags (R, S, T, P).
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct TimingArgs {
    /// R: seconds between keyset refreshes on the servers [init default: 30].
    #[arg(long = "refresh-interval", value_parser = parse_seconds, value_name = "SECS")]
    refresh: Option<f64>,
    /// S: the largest clock difference between servers, in seconds [init default: 60].
    #[arg(long = "max-skew", value_parser = parse_seconds, value_name = "SECS")]
    skew: Option<f64>,
    /// T: the longest state lifetime any server uses, in seconds [init default: 600].
    #[arg(long = "state-ttl", value_parser = parse_seconds, value_name = "SECS")]
    ttl: Option<f64>,
    /// P: seconds a new key is known before it seals [default: 2R + S].
    #[arg(long, value_parser = parse_seconds, value_name = "SECS")]
    propagation: Option<f64>,
}

impl TimingArgs {
    pub(crate) fn any(&self) -> bool {
        self.refresh.is_some()
            || self.skew.is_some()
            || self.ttl.is_some()
            || self.propagation.is_some()
    }

    /// `base` with the flags given applied (P follows R and S unless given or kept by `base`).
    pub(crate) fn over(&self, base: Timing) -> Result<Timing, CliError> {
        let p_was_default = base.propagation
            == Timing::new(base.refresh_interval, base.max_skew, base.ttl).propagation;
        let secs = |flag: Option<f64>, of_base: Duration| flag.unwrap_or(of_base.as_secs_f64());
        let propagation = match self.propagation {
            Some(p) => Some(p),
            None if p_was_default => None,
            None => Some(base.propagation.as_secs_f64()),
        };
        let usage = |e: stateseal::Error| CliError::Usage(e.to_string());
        let t = Timing::try_from_secs_f64(
            secs(self.refresh, base.refresh_interval),
            secs(self.skew, base.max_skew),
            secs(self.ttl, base.ttl),
            propagation,
        )
        .map_err(usage)?;
        t.validate().map_err(usage)?;
        Ok(t)
    }
}

/// `--now` for commands that write, and the guard on it.
#[derive(Debug, Args, Clone)]
pub(crate) struct WriteClockArgs {
    /// Unix time in seconds (fraction allowed) to act at; default: this machine's clock.
    #[arg(long, value_parser = parse_seconds, value_name = "SECS")]
    now: Option<f64>,
    /// Accept a --now further than S from this machine's clock.
    #[arg(long = "allow-clock-override")]
    allow_clock_override: bool,
}

impl WriteClockArgs {
    /// The instant to write at; a `--now` more than `skew` from the system
    /// clock is refused unless overridden (a typo would shift the whole fleet's timeline).
    pub(crate) fn now(&self, skew: f64) -> Result<f64, CliError> {
        let system = SystemClock.now().as_secs_f64();
        let now = read_now(self.now.or(Some(system)))?;
        if (now - system).abs() > skew && !self.allow_clock_override {
            let side = if now > system { "ahead of" } else { "behind" };
            return Err(CliError::Usage(format!(
                "--now is {} {side} this machine's clock, more than S ({skew}s); a timeline written at that time would be wrong for the whole fleet. Pass --allow-clock-override if you mean it",
                crate::output::span(now - system)
            )));
        }
        Ok(now)
    }
}

/// `--now` for inspections: any representable instant.
pub(crate) fn read_now(now: Option<f64>) -> Result<f64, CliError> {
    match now {
        None => Ok(SystemClock.now().as_secs_f64()),
        Some(t)
            if stateseal::UnixTime::from_secs_f64(t)
                .is_some_and(stateseal::keyset::is_representable) =>
        {
            Ok(t)
        }
        Some(t) => Err(CliError::Usage(format!(
            "--now {t}: must be Unix seconds between 1970 and 9999 (milliseconds are not accepted)"
        ))),
    }
}
