//! A rotation's write, retried when it lost only to a server's seal
//! reservation: the one loop behind the scheduler's rotations and the
//! operator's (`stateseal rotate`), and the two entry points on it.

use std::time::Duration;

use super::config::SchedulerConfig;
use super::newest::{judge_against_newest, newest_written, server_floor};
use super::operations::{RotationPlan, load_verified, operator_generation, plan_rotation};
use super::timeline::RotateMode;
use super::trust::{DEFAULT_KEYSET_VALIDITY, KeysetTrust};
use crate::clock::UnixTime;
use crate::error::{Error, KeysetError};
use crate::keyset::{Keyset, KeysetStore, Timing};
use crate::provider::ProviderRegistry;

/// One rotation against a store with the scheduler's settings: load and
/// verify under `config.trust`, [`plan_rotation`] (the document's timing
/// profile, else `config.timing`), apply.
///
/// # Errors
/// As [`rotate_keyset`].
pub async fn rotate_store_at(
    store: &dyn KeysetStore,
    registry: &ProviderRegistry,
    config: &SchedulerConfig,
    now: UnixTime,
    mode: RotateMode,
) -> Result<Keyset, Error> {
    let rotation = Rotation {
        fallback: config.timing,
        timing: None,
        max_live_keys: usize::MAX,
        validity: config.keyset_validity,
        generation_floor: false,
    };
    let trust = KeysetTrust::new(config.trust.clone());
    let plan = rotate_vetted(store, registry, &trust, &rotation, now, mode, &|_| Ok(())).await?;
    Ok(plan.next)
}

/// One rotation against a store, as an operator asks for it (`stateseal
/// rotate`): load and verify under `trust` (a stale document is refused:
/// renew it first), [`plan_rotation`] with `timing` (default: the document's
/// profile), apply with compare-and-swap; a write that lost only to a server's
/// seal reservation is planned again on the new document.
///
/// The written generation is the next one or the Unix time in seconds,
/// whichever is higher, and above the store's newest copy
/// ([`KeysetStore::newest_copy`]). When that copy shows the store holds a
/// restored backup the fleet has moved past, the rotation is judged against
/// the copy as a running instance would judge it, and refused unless the
/// fleet would adopt it (an emergency rotation, which retires every key in
/// the backup now, is adopted).
///
/// # Errors
/// As [`plan_rotation`]; [`KeysetError::Refused`] for a document `trust`
/// refuses; [`KeysetError::BehindNewest`] for a rotation on a restored backup the
/// fleet would refuse; [`KeysetError::Conflict`] when another rotation landed
/// first; store errors.
pub async fn rotate_keyset(
    store: &dyn KeysetStore,
    registry: &ProviderRegistry,
    trust: &KeysetTrust,
    timing: Option<Timing>,
    now: UnixTime,
    mode: RotateMode,
    max_live_keys: usize,
) -> Result<RotationPlan, Error> {
    let rotation = Rotation {
        fallback: Timing::default(),
        timing,
        max_live_keys,
        validity: DEFAULT_KEYSET_VALIDITY,
        generation_floor: true,
    };
    rotate_vetted(store, registry, trust, &rotation, now, mode, &|_| Ok(())).await
}

/// What a rotation is planned with.
pub(crate) struct Rotation {
    /// Timing for documents without a profile.
    pub(crate) fallback: Timing,
    /// Timing that overrides the document's profile.
    pub(crate) timing: Option<Timing>,
    pub(crate) max_live_keys: usize,
    /// How long the written document stays fresh.
    pub(crate) validity: Duration,
    /// Whether the generation jumps to the clock-derived floor (operator writes).
    pub(crate) generation_floor: bool,
}

/// [`rotate_store_at`](super::rotate_store_at), with `vet` run on every
/// document it is about to build on (the scheduler refuses documents older
/// than the one it serves).
///
/// Servers write the keyset too (seal reservations): a write that lost only to
/// such a write is retried on the new document; one that lost to another
/// rotation (the entries changed) is not. The document's timing profile, when
/// it has one, wins over the configured timing: the fleet rotates on one timeline.
pub(crate) async fn rotate_vetted(
    store: &dyn KeysetStore,
    registry: &ProviderRegistry,
    trust: &KeysetTrust,
    rotation: &Rotation,
    now: UnixTime,
    mode: RotateMode,
    vet: &(dyn Fn(&Keyset) -> Result<(), Error> + Sync),
) -> Result<RotationPlan, Error> {
    let at = now;
    let now = at.as_secs_f64();
    let mut base = load_verified(store, registry, trust, at).await?;
    vet(&base.doc)?;
    // An operator's write is judged against the newest copy (and may lift its
    // generation above it); a server's is refused on anything older.
    let newest = if rotation.generation_floor {
        newest_written(store, registry, trust, &base.doc.id).await
    } else {
        server_floor(store, registry, trust, &base.doc).await?;
        None
    };
    let mut retries = RESERVATION_RETRIES;
    loop {
        let doc = &base.doc;
        let timing = rotation.timing.or(doc.timing).unwrap_or(rotation.fallback);
        let mut plan = plan_rotation(
            &base,
            registry,
            Some(timing),
            at,
            mode,
            rotation.max_live_keys,
        )
        .await?;
        plan.expires_at = at + rotation.validity;
        if rotation.generation_floor {
            plan.next.generation = operator_generation(doc.generation, at);
            judge_against_newest(store, doc, &mut plan.next, newest.as_ref(), now)?;
        }
        match plan.apply(store).await {
            Ok(()) => return Ok(plan),
            Err(Error::Keyset(KeysetError::Conflict { .. })) if retries > 0 => {
                retries -= 1;
                let stored = load_verified(store, registry, trust, at).await?;
                if !same_entries(&stored.doc, doc) {
                    return Err(Error::Keyset(KeysetError::Conflict {
                        expected: Some(doc.generation),
                        found: Some(stored.doc.generation),
                    }));
                }
                vet(&stored.doc)?;
                base = stored;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Whether two documents hold the same entries in the same order (a seal
/// reservation changes counters only).
fn same_entries(a: &Keyset, b: &Keyset) -> bool {
    a.keys.len() == b.keys.len() && a.keys.iter().zip(&b.keys).all(|(x, y)| x.entry == y.entry)
}

/// How often a rotation retries after losing to a seal reservation.
const RESERVATION_RETRIES: usize = 4;
