//! A rotation's write, retried when it lost only to a server's seal
//! reservation: the one loop behind the scheduler's rotations and the
//! operator's (`stateseal rotate`).

use super::newest::{judge_against_newest, newest_written, server_floor};
use super::operations::{RotationPlan, load_verified, operator_generation, plan_rotation};
use super::timeline::RotateMode;
use super::trust::KeysetTrust;
use crate::error::Error;
use crate::keyset::{Keyset, KeysetStore, Timing};
use crate::provider::ProviderRegistry;

/// What a rotation is planned with.
pub(crate) struct Rotation {
    /// Timing for documents without a profile.
    pub(crate) fallback: Timing,
    /// Timing that overrides the document's profile.
    pub(crate) timing: Option<Timing>,
    pub(crate) max_live_keys: usize,
    /// How long the written document stays fresh.
    pub(crate) validity: f64,
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
    now: f64,
    mode: RotateMode,
    vet: &(dyn Fn(&Keyset) -> Result<(), Error> + Sync),
) -> Result<RotationPlan, Error> {
    let mut base = load_verified(store, registry, trust, now).await?;
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
            now,
            mode,
            rotation.max_live_keys,
        )
        .await?;
        plan.expires_at = now + rotation.validity;
        if rotation.generation_floor {
            plan.next.generation = operator_generation(doc.generation, now);
            judge_against_newest(store, doc, &mut plan.next, newest.as_ref(), now)?;
        }
        match plan.apply(store).await {
            Ok(()) => return Ok(plan),
            Err(Error::Conflict { .. }) if retries > 0 => {
                retries -= 1;
                let stored = load_verified(store, registry, trust, now).await?;
                if !same_entries(&stored.doc, doc) {
                    return Err(Error::Conflict {
                        expected: Some(doc.generation),
                        found: Some(stored.doc.generation),
                    });
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
