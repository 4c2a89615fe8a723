//! `stateseal rotate --if-due` as a library function: what a scheduled job
//! (deploy/'s hourly CronJob) runs so that the servers can stay read-only,
//! and what the fleet simulation's rotator job runs. It rotates when the
//! primary is due by age or by the fleet's seal reservations, else renews the
//! document when less than half its validity is left, else does nothing.

use std::time::Duration;

use super::operations::{DEFAULT_MAX_LIVE_KEYS, RotationPlan, load_existing};
use super::rotate::rotate_keyset;
use super::{
    DEFAULT_KEYSET_VALIDITY, KeysetTrust, Phase, RotateMode, SchedulerConfig, VerifiedKeyset,
    describe_keyset, renew_keyset,
};
use crate::clock::UnixTime;
use crate::error::Error;
use crate::keyset::KeysetStore;
use crate::provider::ProviderRegistry;

/// What [`rotate_if_due`] did.
#[derive(Debug)]
#[non_exhaustive]
pub enum IfDue {
    /// A rotation was due (the reason) and is written.
    Rotated {
        /// Why it was due, in words.
        reason: String,
        /// The rotation written.
        plan: Box<RotationPlan>,
    },
    /// Nothing was due but the document's renewal, now written.
    Renewed(VerifiedKeyset),
    /// Nothing was due: nothing written.
    Nothing(VerifiedKeyset),
}

/// What is due on `v` at `now`, if anything: `Some(reason)` for a rotation
/// (the primary has sealed for `period`, or the fleet has reserved
/// the per-key seal limit under it). Nothing is due while a rotation is in flight.
pub fn rotation_due(v: &VerifiedKeyset, now: UnixTime, period: Duration) -> Option<String> {
    let at = now;
    let now = at.as_secs_f64();
    let st = describe_keyset(&v.doc, at);
    if st.phase != Some(Phase::Three) {
        return None;
    }
    let primary = st.primary()?;
    let entry = v.doc.entry(&primary.entry)?;
    let max = SchedulerConfig::default().max_seals_per_key;
    let period = period.as_secs_f64();
    if now - primary.activate_at.as_secs_f64() >= period {
        Some(format!(
            "the primary key has sealed for {:.0} days (rotation period {:.0} days)",
            (now - primary.activate_at.as_secs_f64()) / 86_400.0,
            period / 86_400.0
        ))
    } else if entry.seals_reserved >= max {
        Some(format!(
            "the fleet has reserved {} seals under the primary key (limit {max})",
            entry.seals_reserved
        ))
    } else {
        None
    }
}

/// Renews `v` when less than half its validity is left; what was written, if anything.
///
/// # Errors
/// As [`renew_keyset`].
pub async fn renew_if_due(
    store: &dyn KeysetStore,
    registry: &ProviderRegistry,
    trust: &KeysetTrust,
    v: &VerifiedKeyset,
    now: UnixTime,
) -> Result<Option<VerifiedKeyset>, Error> {
    if !v.renewal_due(now, DEFAULT_KEYSET_VALIDITY) {
        return Ok(None);
    }
    renew_keyset(
        store,
        registry,
        trust,
        v.doc.generation,
        DEFAULT_KEYSET_VALIDITY,
        now,
    )
    .await
    .map(Some)
}

/// Reads and verifies the document in `store` (freshness included), then
/// rotates it if a rotation is due ([`rotation_due`] with `period`), else
/// renews it if that is due, else writes nothing.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use stateseal::rotation::{IfDue, KeysetTrust, Timing, TrustPolicy, init_keyset, rotate_if_due};
/// use stateseal::{FileStore, LocalProvider, ProviderRegistry, UnixTime};
/// use std::time::Duration;
/// let dir = std::env::temp_dir().join(format!("stateseal-doc-if-due-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// LocalProvider::create_kek(&dir.join("kek"))?;
/// let mut registry = ProviderRegistry::with_defaults();
/// registry.allow_local_kek();
/// let store = FileStore::new(dir.join("keyset.json"));
/// let kek = format!("local://{}", dir.join("kek").display());
/// let t0 = UnixTime::from_secs(1_782_345_600);
/// init_keyset(&store, &registry, &kek, Timing::default(), t0).await?;
/// let trust = KeysetTrust::new(TrustPolicy::default());
/// let day = Duration::from_secs(86_400);
/// let early = rotate_if_due(&store, &registry, &trust, day, t0 + Duration::from_secs(3600)).await?;
/// assert!(matches!(early, IfDue::Nothing(_)));
/// let due = rotate_if_due(&store, &registry, &trust, day, t0 + Duration::from_secs(86_400)).await?;
/// assert!(matches!(due, IfDue::Rotated { .. }));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
///
/// # Errors
/// Store and provider errors; a refused or stale document; as
/// [`rotate_keyset`] ([`KeysetError::Conflict`](crate::KeysetError::Conflict) when another writer landed first).
pub async fn rotate_if_due(
    store: &dyn KeysetStore,
    registry: &ProviderRegistry,
    trust: &KeysetTrust,
    period: Duration,
    now: UnixTime,
) -> Result<IfDue, Error> {
    let stored = load_existing(store).await?;
    let fresh = trust.open(registry, store.uri(), &stored, now).await?;
    if let Some(reason) = rotation_due(&fresh, now, period) {
        let plan = rotate_keyset(
            store,
            registry,
            trust,
            None,
            now,
            RotateMode::Scheduled,
            DEFAULT_MAX_LIVE_KEYS,
        )
        .await?;
        return Ok(IfDue::Rotated {
            reason,
            plan: Box::new(plan),
        });
    }
    Ok(
        match renew_if_due(store, registry, trust, &fresh, now).await? {
            Some(renewed) => IfDue::Renewed(renewed),
            None => IfDue::Nothing(fresh),
        },
    )
}
