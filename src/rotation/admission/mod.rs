//! Which verified keyset documents an instance adopts.
//!
//! A store can hand back a document the fleet has already moved past: a
//! lagging replica, a restored object version, a careless copy, or an old
//! authentic document republished on purpose. Adopting it would bring back
//! keys an emergency rotation retired, so each instance keeps the document it
//! last adopted and refuses anything older or foreign, and every entry may
//! only move the way legitimate writes move it: ids, key ids and algorithms
//! never change, activations and retirements only come earlier, reservations
//! only grow, pruned entries never return. A restarted instance has no
//! watermark; `min_generation` and the document's `expires_at` cover it.

use std::collections::BTreeSet;

use crate::error::{Error, KeysetError};
use crate::keyset::{KeyEntry, Keyset, Timing};

/// Why a document was not adopted; also the `reason` label of
/// `stateseal_keyset_rejected_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The store held bytes that are not a valid keyset document.
    Invalid,
    /// Two entries unwrap to the same key id.
    DuplicateKey,
    /// A lower generation than the one already adopted.
    Rollback,
    /// The same generation with different contents (a write that bypassed compare-and-swap).
    Rewritten,
    /// Another keyset id than the one already adopted.
    OtherKeyset,
    /// The document's timing profile allows shorter-lived states than this
    /// instance seals: its rotations would retire keys under live states.
    Timing,
    /// An unauthenticated (`stateseal.keyset/v1`) document, not accepted by configuration.
    Unauthenticated,
    /// The MAC tag does not verify, or the MAC key does not unwrap for this keyset.
    Mac,
    /// A KEK (a data key's or the MAC key's) the configuration does not pin.
    UnpinnedKek,
    /// A generation below the configured `min_generation`.
    BelowMinimum,
    /// Past the document's `expires_at`.
    Expired,
    /// An entry's key id changed.
    KeyChanged,
    /// An entry activates later than the adopted document said.
    ActivationDelayed,
    /// An entry activates further ahead than any legitimate rotation schedules.
    ActivationTooFar,
    /// An entry retires later than the adopted document said (or no longer retires).
    RetirementDelayed,
    /// An entry's seal reservations went down.
    ReservationsDecreased,
    /// An entry this instance saw pruned is back.
    PrunedReturned,
    /// A revocation entry that can still cover a valid state is gone.
    RevocationDropped,
    /// At first adoption: a lower generation than the store's newest copy
    /// (a restored backup, seen by an instance with no watermark).
    BehindNewest,
}

impl Refusal {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::Invalid => "invalid",
            Self::DuplicateKey => "duplicate_key",
            Self::Rollback => "rollback",
            Self::Rewritten => "rewritten",
            Self::OtherKeyset => "other_keyset",
            Self::Timing => "timing",
            Self::Unauthenticated => "unauthenticated",
            Self::Mac => "mac",
            Self::UnpinnedKek => "unpinned_kek",
            Self::BelowMinimum => "below_min_generation",
            Self::Expired => "expired",
            Self::KeyChanged => "key_changed",
            Self::ActivationDelayed => "activation_delayed",
            Self::ActivationTooFar => "activation_too_far",
            Self::RetirementDelayed => "retirement_delayed",
            Self::ReservationsDecreased => "reservations_decreased",
            Self::PrunedReturned => "pruned_returned",
            Self::RevocationDropped => "revocation_dropped",
            Self::BehindNewest => "behind_newest",
        }
    }

    /// Whether refusing a document for this reason stays right for as long as
    /// the store holds the same bytes and this instance the same watermark:
    /// what the bytes say (tag, pins, ids, generation), never what depends on
    /// the clock (expiry, entries judged only while live) or on a KMS answer.
    pub(crate) fn is_permanent(label: &str) -> bool {
        [
            Self::Invalid,
            Self::DuplicateKey,
            Self::Rollback,
            Self::Rewritten,
            Self::OtherKeyset,
            Self::Timing,
            Self::Unauthenticated,
            Self::UnpinnedKek,
            Self::BelowMinimum,
            Self::BehindNewest,
        ]
        .iter()
        .any(|r| r.label() == label)
    }

    /// Counts and logs the refusal (reason and generations only: a document holds no secrets,
    /// but its entries are not the log's business) and returns the error a refresh reports.
    pub(crate) fn record(self, store: &str, detail: String) -> Error {
        metrics::counter!("stateseal_keyset_rejected_total", "reason" => self.label()).increment(1);
        tracing::warn!(store, reason = self.label(), %detail, "keyset document refused; serving on the last good document");
        Error::Keyset(KeysetError::Refused {
            reason: self.label(),
            detail,
        })
    }
}

/// Whether `candidate` may replace `adopted` (the last document this instance
/// adopted) at `now`, for an instance configured with `configured` timing
/// (its states live `configured.ttl` seconds) which has seen the entries
/// `pruned` leave the document.
///
/// An entry the candidate retires at or before `now` is in no ring on this
/// instance, now or later (a later document may only retire it earlier), so
/// the per-entry rules do not apply to it: an operator who restores a backup
/// and rotates with `--now-compromise` (every other key retired now) writes a
/// document the running fleet adopts, whatever the backup's old entries say.
pub(crate) fn admit(
    adopted: Option<&Keyset>,
    candidate: &Keyset,
    configured: &Timing,
    now: f64,
    pruned: &BTreeSet<String>,
) -> Result<(), (Refusal, String)> {
    let ttl = configured.ttl.as_secs_f64();
    if let Some(t) = candidate.timing
        && configured.ttl > t.ttl
    {
        return Err((
            Refusal::Timing,
            format!(
                "this instance seals states for {ttl}s but keyset {} rotates for states of at most {}s (its T); lower the configured ttl, or re-create the keyset with a longer --state-ttl",
                candidate.id,
                t.ttl.as_secs_f64()
            ),
        ));
    }
    // A scheduled rotation activates its key P after writing it, on a clock up to S ahead
    // (documents without a profile rotate on the writer's configured timing).
    let profile = candidate.timing.unwrap_or_default();
    let delay = profile
        .propagation
        .max(configured.propagation)
        .saturating_add(profile.max_skew.max(configured.max_skew))
        .as_secs_f64();
    let latest = now + delay;
    if let Some(adopted) = adopted {
        if candidate.id != adopted.id {
            return Err((
                Refusal::OtherKeyset,
                format!(
                    "the store now holds keyset {} but this instance serves keyset {}; restart the instance to switch keysets",
                    candidate.id, adopted.id
                ),
            ));
        }
        if candidate.generation < adopted.generation {
            return Err((
                Refusal::Rollback,
                format!(
                    "generation {} is older than generation {} already adopted",
                    candidate.generation, adopted.generation
                ),
            ));
        }
        if candidate.generation == adopted.generation && candidate != adopted {
            return Err((
                Refusal::Rewritten,
                format!(
                    "generation {} changed without a new generation number",
                    candidate.generation
                ),
            ));
        }
        // Judged with the adopted document's timing: the one this instance trusted.
        let timing = adopted.timing.unwrap_or_default();
        if let Some(r) =
            crate::keyset::dropped_live(&adopted.revocations, &timing, &candidate.revocations, now)
        {
            return Err((
                Refusal::RevocationDropped,
                format!(
                    "generation {} drops a {} revocation (before {}) that still covers states valid for {:.0}s; revocations leave only once nothing they cover can verify",
                    candidate.generation,
                    r.kind(),
                    crate::keyset::format_rfc3339(r.before.as_secs_f64()),
                    crate::keyset::live_until(r, &timing).as_secs_f64() - now,
                ),
            ));
        }
    }
    let live = |e: &&KeyEntry| e.retire_at.is_none_or(|r| r > now);
    for e in candidate.keys.iter().filter(live) {
        if pruned.contains(&e.entry) {
            return Err((
                Refusal::PrunedReturned,
                format!("entry {} was pruned and is back", e.entry),
            ));
        }
        // An entry already adopted was judged when it arrived (it may only
        // move earlier since); a clock that went back must not refuse it again.
        let known = adopted.is_some_and(|a| a.entry(&e.entry).is_some());
        if !known && e.activate_at > latest {
            return Err((
                Refusal::ActivationTooFar,
                format!(
                    "entry {} activates {:.0}s from now, later than any rotation schedules (P + S = {delay:.0}s)",
                    e.entry,
                    e.activate_at - now,
                ),
            ));
        }
    }
    for e in candidate.keys.iter().filter(live) {
        if let Some(was) = adopted.and_then(|a| a.entry(&e.entry)) {
            entry_moves(was, e)?;
        }
    }
    Ok(())
}

/// Whether entry `was` may become `now_is` in a later generation.
fn entry_moves(was: &KeyEntry, now_is: &KeyEntry) -> Result<(), (Refusal, String)> {
    let id = &was.entry;
    if was.kid.is_some() && now_is.kid != was.kid {
        return Err((
            Refusal::KeyChanged,
            format!("entry {id} changed its key id"),
        ));
    }
    if now_is.alg != was.alg {
        return Err((
            Refusal::KeyChanged,
            format!(
                "entry {id} changed its algorithm from {} to {}; a key serves one algorithm for life",
                crate::keyset::alg_name(was.alg),
                crate::keyset::alg_name(now_is.alg)
            ),
        ));
    }
    if now_is.activate_at > was.activate_at {
        return Err((
            Refusal::ActivationDelayed,
            format!(
                "entry {id} would activate {:.3}s later than before; activations only come earlier",
                now_is.activate_at - was.activate_at
            ),
        ));
    }
    let later = match (was.retire_at, now_is.retire_at) {
        (_, None) => was.retire_at.is_some(),
        (None, Some(_)) => false,
        (Some(a), Some(b)) => b > a,
    };
    if later {
        return Err((
            Refusal::RetirementDelayed,
            format!("entry {id} would retire later than before; retirements only come earlier"),
        ));
    }
    if now_is.seals_reserved < was.seals_reserved {
        return Err((
            Refusal::ReservationsDecreased,
            format!(
                "entry {id}: seals reserved went down from {} to {}",
                was.seals_reserved, now_is.seals_reserved
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
