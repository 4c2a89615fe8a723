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

use crate::clock::UnixTime;
use crate::error::{Error, KeysetError, KeysetRefusal};
use crate::keyset::{KeyEntry, Keyset, Timing};

impl KeysetRefusal {
    /// Whether refusing a document for this reason stays right for as long as
    /// the store holds the same bytes and this instance the same watermark:
    /// what the bytes say (tag, pins, ids, generation), never what depends on
    /// the clock (expiry, entries judged only while live) or on a KMS answer.
    pub(crate) fn is_permanent(self) -> bool {
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
        .contains(&self)
    }

    /// Counts and logs the refusal (reason and generations only: a document holds no secrets,
    /// but its entries are not the log's business) and returns the error a refresh reports.
    pub(crate) fn record(self, store: &str, detail: String) -> Error {
        metrics::counter!("stateseal_keyset_rejected_total", "reason" => self.label()).increment(1);
        tracing::warn!(store, reason = self.label(), %detail, "keyset document refused; serving on the last good document");
        Error::Keyset(KeysetError::Refused {
            reason: self,
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
) -> Result<(), (KeysetRefusal, String)> {
    let ttl = configured.ttl.as_secs_f64();
    if let Some(t) = candidate.timing
        && configured.ttl > t.ttl
    {
        return Err((
            KeysetRefusal::Timing,
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
                KeysetRefusal::OtherKeyset,
                format!(
                    "the store now holds keyset {} but this instance serves keyset {}; restart the instance to switch keysets",
                    candidate.id, adopted.id
                ),
            ));
        }
        if candidate.generation < adopted.generation {
            return Err((
                KeysetRefusal::Rollback,
                format!(
                    "generation {} is older than generation {} already adopted",
                    candidate.generation, adopted.generation
                ),
            ));
        }
        if candidate.generation == adopted.generation && candidate != adopted {
            return Err((
                KeysetRefusal::Rewritten,
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
                KeysetRefusal::RevocationDropped,
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
    let live = |e: &&KeyEntry| {
        e.retire_at
            .is_none_or(|r| r > UnixTime::from_finite_secs(now))
    };
    for e in candidate.keys.iter().filter(live) {
        if pruned.contains(&e.entry) {
            return Err((
                KeysetRefusal::PrunedReturned,
                format!("entry {} was pruned and is back", e.entry),
            ));
        }
        // An entry already adopted was judged when it arrived (it may only
        // move earlier since); a clock that went back must not refuse it again.
        let known = adopted.is_some_and(|a| a.entry(&e.entry).is_some());
        if !known && e.activate_at > UnixTime::from_finite_secs(latest) {
            return Err((
                KeysetRefusal::ActivationTooFar,
                format!(
                    "entry {} activates {:.0}s from now, later than any rotation schedules (P + S = {delay:.0}s)",
                    e.entry,
                    e.activate_at.as_secs_f64() - now,
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
fn entry_moves(was: &KeyEntry, now_is: &KeyEntry) -> Result<(), (KeysetRefusal, String)> {
    let id = &was.entry;
    if was.kid.is_some() && now_is.kid != was.kid {
        return Err((
            KeysetRefusal::KeyChanged,
            format!("entry {id} changed its key id"),
        ));
    }
    if now_is.alg != was.alg {
        return Err((
            KeysetRefusal::KeyChanged,
            format!(
                "entry {id} changed its algorithm from {} to {}; a key serves one algorithm for life",
                crate::keyset::alg_name(was.alg),
                crate::keyset::alg_name(now_is.alg)
            ),
        ));
    }
    if now_is.activate_at > was.activate_at {
        return Err((
            KeysetRefusal::ActivationDelayed,
            format!(
                "entry {id} would activate {:.3}s later than before; activations only come earlier",
                now_is.activate_at.as_secs_f64() - was.activate_at.as_secs_f64()
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
            KeysetRefusal::RetirementDelayed,
            format!("entry {id} would retire later than before; retirements only come earlier"),
        ));
    }
    if now_is.seals_reserved < was.seals_reserved {
        return Err((
            KeysetRefusal::ReservationsDecreased,
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
