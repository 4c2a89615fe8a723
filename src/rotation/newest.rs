//! The newest document ever written, kept beside the store's own
//! ([`KeysetStore::newest_copy`]), so that an operator's write notices it is
//! built on a restored backup the running fleet has moved past.
//!
//! A running instance refuses a document that moves any entry backwards (see
//! `admission`). A backup put back in place and then rotated or renewed is
//! exactly that: its entries predate reservations, retirements and prunes the
//! fleet adopted since. Nothing in the backup can tell, so every writer keeps
//! a copy of what it wrote beside the document, and an operator's write judges
//! its result against that copy the way the fleet will: it refuses, saying
//! why, instead of reporting a success the fleet then refuses.
//!
//! The copy is a detection aid, not a control: a store writer can delete it
//! or replace it with an older authentic one (either only turns the check
//! off), and cannot forge a newer one (it must verify like the document). The
//! fleet's own admission is what keeps keys from moving backwards.

use std::collections::BTreeSet;

use super::admission::admit;
use super::trust::KeysetTrust;
use crate::error::{Error, KeysetError};
use crate::keyset::{Keyset, KeysetStore, StoredKeyset};
use crate::provider::ProviderRegistry;

/// How often a copy update retries after losing to another writer's.
const COPY_RETRIES: usize = 3;

/// Writes `doc` with compare-and-swap on `expected`, then brings the newest
/// copy up to it. Every keyset write goes through here; a failed copy update
/// is logged and counted, never reported as a failed write (the document
/// landed).
///
/// # Errors
/// The document write's: [`KeysetError::Conflict`], store errors.
pub(crate) async fn write_keyset(
    store: &dyn KeysetStore,
    expected: Option<u64>,
    doc: &StoredKeyset,
) -> Result<(), Error> {
    if let Err(e) = store.compare_and_swap(expected, doc).await {
        if matches!(e, Error::Keyset(KeysetError::Conflict { .. })) {
            // A lost compare-and-swap: expected in a fleet of writers, rare.
            metrics::counter!("stateseal_keyset_write_conflicts_total").increment(1);
            tracing::debug!(store = %store.uri(), generation = doc.generation(), "another writer's keyset write landed first");
        }
        return Err(e);
    }
    if let Some(copy) = store.newest_copy()
        && let Err(e) = record(&*copy, doc).await
    {
        metrics::counter!("stateseal_keyset_newest_copy_failures_total").increment(1);
        tracing::warn!(store = %store.uri(), copy = %copy.uri(), error = %e, "the keyset was written but its newest copy was not updated; a restored backup may go unnoticed until the next write");
    }
    Ok(())
}

/// Replaces the copy with `doc` unless it already holds that generation or a
/// later one.
async fn record(copy: &dyn KeysetStore, doc: &StoredKeyset) -> Result<(), Error> {
    let mut retries = COPY_RETRIES;
    loop {
        let held = copy.load().await?.map(|c| c.generation());
        if held.is_some_and(|g| g >= doc.generation()) {
            return Ok(());
        }
        match copy.compare_and_swap(held, doc).await {
            Err(Error::Keyset(KeysetError::Conflict { .. })) if retries > 0 => retries -= 1,
            other => return other,
        }
    }
}

/// The newest copy, verified under `trust`, when it is of keyset `id`:
/// `None` when there is none or it holds another keyset (one created before
/// this one at the same location). A copy that cannot be read or does not
/// verify, for any reason, also gives `None`, with a warning and a count:
/// a store writer can spoil the copy, and a writer not yet granted the copy's
/// object cannot read it; either turns this check off, and neither may stop
/// an operator's rotations (the fleet's admission is the control).
pub(crate) async fn newest_written(
    store: &dyn KeysetStore,
    registry: &ProviderRegistry,
    trust: &KeysetTrust,
    id: &str,
) -> Option<Keyset> {
    let copy = store.newest_copy()?;
    let unusable = |problem: &dyn std::fmt::Display| {
        metrics::counter!("stateseal_keyset_newest_copy_failures_total").increment(1);
        tracing::warn!(copy = %copy.uri(), %problem, "the newest keyset copy is unusable; a write on a restored backup is not detected");
    };
    let held = match copy.load().await {
        Ok(Some(held)) if held.id() == id => held,
        Ok(_) => return None,
        Err(e) => {
            unusable(&e);
            return None;
        }
    };
    match trust
        .open_ignoring_expiry(registry, copy.uri(), &held)
        .await
    {
        Ok(verified) => Some(verified.doc),
        Err(e) => {
            unusable(&e);
            None
        }
    }
}

/// Where the store's newest copy shows that `base` (the document in place)
/// is a restored backup: the generation written before it, and the copy's
/// URI for the way out.
pub(crate) struct Behind {
    pub(crate) newest: u64,
    pub(crate) copy: String,
}

/// Whether `base` is behind the store's newest copy (`None`: it is not, or
/// there is no usable copy). The copy is read after the document: another
/// writer's compare-and-swap and copy update may have landed in between.
/// Then the document moved on too: [`KeysetError::Conflict`], a lost race, not a
/// backup.
///
/// # Errors
/// [`KeysetError::Conflict`] when the document moved on while the copy was read;
/// the store's errors re-reading it.
pub(crate) async fn behind_newest(
    store: &dyn KeysetStore,
    registry: &ProviderRegistry,
    trust: &KeysetTrust,
    base: &Keyset,
) -> Result<Option<Behind>, Error> {
    let Some(newest) = newest_written(store, registry, trust, &base.id).await else {
        return Ok(None);
    };
    if newest.generation <= base.generation {
        return Ok(None);
    }
    let current = store.load().await?.map(|d| d.generation());
    if current != Some(base.generation) {
        return Err(Error::Keyset(KeysetError::Conflict {
            expected: Some(base.generation),
            found: current,
        }));
    }
    Ok(Some(Behind {
        newest: newest.generation,
        copy: copy_uri(store),
    }))
}

/// The newest copy's URI (empty for a store that keeps none).
fn copy_uri(store: &dyn KeysetStore) -> String {
    store
        .newest_copy()
        .map_or_else(String::new, |c| c.uri().to_owned())
}

/// A server's write floor: a server writes (claims, renewals, seal
/// reservations, rotations) only on the newest document it can see. A
/// restarted server has no watermark, so a restored backup the running fleet
/// refuses would otherwise be renewed or rotated by it, its retired keys
/// back for good; the copy says the store went backwards.
///
/// # Errors
/// [`KeysetError::BehindNewest`] naming the generations and the two ways out;
/// [`KeysetError::Conflict`] when the document moved on while the copy was read.
pub(crate) async fn server_floor(
    store: &dyn KeysetStore,
    registry: &ProviderRegistry,
    trust: &KeysetTrust,
    base: &Keyset,
) -> Result<(), Error> {
    let Some(Behind { newest, copy }) = behind_newest(store, registry, trust, base).await? else {
        return Ok(());
    };
    metrics::counter!("stateseal_keyset_writes_refused_total", "reason" => "behind_newest")
        .increment(1);
    Err(Error::Keyset(KeysetError::BehindNewest(format!(
        "the store holds generation {}, but generation {newest} was written before it (its copy is {copy}): this is a restored backup, and a server neither renews, claims on nor rotates it. Put the newest document back (copy {copy} over {}), or retire every key in the backup with `stateseal rotate --now-compromise`",
        base.generation,
        store.uri(),
    ))))
}

/// Refuses an operator's write of `candidate`, built on `base`, when a
/// running instance holding `newest` (the newest document ever written here)
/// would refuse it; otherwise lifts `candidate`'s generation above `newest`'s,
/// so the fleet does not take it for a rollback either.
///
/// # Errors
/// [`KeysetError::BehindNewest`] naming the generations, the fleet's reason and
/// the two ways out.
pub(crate) fn judge_against_newest(
    store: &dyn KeysetStore,
    base: &Keyset,
    candidate: &mut Keyset,
    newest: Option<&Keyset>,
    now: f64,
) -> Result<(), Error> {
    let Some(newest) = newest.filter(|n| n.generation > base.generation) else {
        return Ok(());
    };
    candidate.generation = candidate
        .generation
        .max(newest.generation.saturating_add(1));
    // Revocations only ever refuse more: the newest document's live ones are
    // carried into a write on a restored backup, so the restore revives none
    // of the states they cover (and the fleet does not refuse the write for it).
    let profile = newest.timing.unwrap_or_default();
    for r in &newest.revocations {
        if now < crate::keyset::live_until(r, &profile).as_secs_f64()
            && !candidate.revocations.contains(r)
        {
            candidate.revocations.push(r.clone());
        }
    }
    // What the fleet saw leave the document since the base was written.
    let pruned: BTreeSet<String> = base
        .keys
        .iter()
        .filter(|e| newest.entry(&e.entry).is_none())
        .map(|e| e.entry.clone())
        .collect();
    let timing = candidate.timing.unwrap_or_default();
    admit(Some(newest), candidate, &timing, now, &pruned).map_err(|(reason, detail)| {
        let copy = copy_uri(store);
        Error::Keyset(KeysetError::BehindNewest(format!(
            "the store holds generation {}, but generation {} was written before it (its copy is {copy}): this is a restored backup, and instances serving generation {} would refuse this write ({}: {detail}). Put the newest document back (copy {copy} over {}), or retire every key in the backup with `stateseal rotate --now-compromise`",
            base.generation,
            newest.generation,
            newest.generation,
            reason.label(),
            store.uri(),
        )))
    })
}
