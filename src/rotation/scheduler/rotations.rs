//! Rotations a scheduler writes: on demand, or when the primary is due by age
//! or by the fleet's seal count, one rotator per rotation.
//!
//! When a rotation falls due every writing instance sees it within R. Each
//! waits for its own turn, a point of the rendezvous window drawn from a hash
//! of its id and the rotation, so the instance with the earliest turn goes
//! first; it then *claims* the rotation with one compare-and-swap write of
//! the document (tagged with the cached MAC key: no KMS call) before it makes
//! any KMS call. The others see the claim, or lose the claim's race, and make
//! no KMS call until the rotation is published. A claim lapses after
//! [`CLAIM_TTL`]; turns then start again from its end (the bounded fallback
//! when a claimant dies mid-rotation).
//!
//! A claimant that lives but cannot rotate (its KMS role lacks the generate
//! permission, its route is broken, it is throttled) steps back. Each new
//! claim on the same rotation lists the earlier claimants (`tried`); an
//! instance in that list, or the holder, takes its next turn two rendezvous
//! windows after the claim lapses (one window, plus one for refresh lag and
//! clock skew), after every instance that has not claimed yet. So with k
//! instances that cannot make keys, the rotation lands within k × (claim
//! lifetime + 4R) plus R of falling due, and each failing instance rewrites
//! the document once per round of turns, not once per refresh.

use std::time::Duration;

use sha2::{Digest, Sha256};

use super::{RotationScheduler, lock};
use crate::clock::UnixTime;
use crate::error::{Error, KeysetError};
use crate::keyset::{Keyset, RotationClaim, Timing};
use crate::rotation::newest::write_keyset;
use crate::rotation::rotate::{Rotation, rotate_vetted};
use crate::rotation::timeline::{Phase, RotateMode, ring_at};

/// How long a claim holds: one rotation's KMS calls and write take seconds.
pub const CLAIM_TTL: Duration = Duration::from_secs(60);

/// The rendezvous window: turns are spread over 4R after a write falls due.
fn rendezvous_window(timing: &Timing) -> f64 {
    4.0 * timing.refresh_interval.as_secs_f64()
}

/// How far into the window `instance`'s turn for the write named `what`
/// falls: `rotation/<activation of the primary it replaces>` or
/// `renewal/<expiry it renews>`, times every instance reads alike (and that
/// a simulation reproduces, unlike random entry ids).
pub(super) fn turn_offset(timing: &Timing, instance: &str, what: &str) -> f64 {
    rendezvous_window(timing) * rendezvous_point(instance, what)
}

/// Where in the window `instance`'s turn for the write `what` falls, in
/// [0, 1): a hash, so every instance computes every other's without talking to it.
pub(crate) fn rendezvous_point(instance: &str, what: &str) -> f64 {
    let mut h = Sha256::new();
    for part in [instance, what] {
        h.update((part.len() as u64).to_be_bytes());
        h.update(part.as_bytes());
    }
    let d = h.finalize();
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    (u64::from_be_bytes(b) >> 11) as f64 / (1u64 << 53) as f64
}

impl RotationScheduler {
    /// Rotates when the primary is due, judged on the document just loaded:
    /// at this instance's turn, after claiming the rotation (see the module).
    pub(super) async fn maybe_auto_rotate(&self, doc: &Keyset, now: UnixTime) {
        let at = now;
        let now = at.as_secs_f64();
        let inner = &self.inner;
        let Some(ring) = inner.ring.current() else {
            return;
        };
        // Phase 1 or 2: a rotation is in flight already.
        let Some(plan) = ring_at(doc, now).filter(|p| p.phase == Phase::Three) else {
            return;
        };
        let Some(primary) = doc.entry(&plan.primary) else {
            return;
        };
        let due_by_age = self
            .rotation_turn(doc, &plan.primary)
            .is_some_and(|turn| now >= turn);
        // The fleet's reservations under the key, or (reservations off) this process's own seals.
        let max = inner.config.max_seals_per_key;
        let by_count = primary.alg == crate::key::TokenFormat::V1
            && (primary.seals_reserved >= max || ring.primary().seal_count() >= max);
        if !due_by_age && !by_count {
            return;
        }
        // (A seal-count rotation has no known start and so no turn: the claim
        // alone keeps it to one rotator.)
        if let Some(c) = &doc.rotation_claim
            && c.excludes(
                &inner.instance_id,
                &plan.primary,
                UnixTime::from_finite_secs(now),
            )
        {
            return;
        }
        if self.stepped_back(doc, &plan.primary, now) {
            return;
        }
        match self.claim(doc, &plan.primary, now).await {
            Ok(()) => {}
            // Another instance wrote first (its claim, or anything else): judged again at the next refresh.
            // Behind the newest copy: said once when found.
            Err(
                Error::Keyset(KeysetError::Conflict { .. })
                | Error::Keyset(KeysetError::BehindNewest(_)),
            ) => return,
            Err(e) => {
                tracing::warn!(error = %e, "could not claim the due rotation; the next refresh tries again");
                return;
            }
        }
        match self.rotate_at(at, RotateMode::Scheduled).await {
            Ok(doc) => tracing::info!(
                generation = doc.generation,
                by_age = due_by_age,
                by_count,
                "rotated the keyset automatically"
            ),
            // Another instance won the race, or started a rotation: nothing to do.
            Err(
                Error::Keyset(KeysetError::Conflict { .. })
                | Error::Keyset(KeysetError::RotationInFlight(_)),
            ) => {}
            Err(e) => {
                metrics::counter!("stateseal_rotation_failures_total").increment(1);
                let timing = doc.timing.unwrap_or(inner.config.timing);
                tracing::warn!(
                    error = %e,
                    retry_after_s = CLAIM_TTL.as_secs_f64() + 2.0 * rendezvous_window(&timing),
                    "automatic rotation failed; stepping back so that another instance rotates once this claim lapses"
                );
            }
        }
    }

    /// Whether this instance holds (or held) the claim on the rotation away
    /// from `primary` and must leave the next turns to the others: until its
    /// claim has lapsed and a whole rendezvous window has passed after it.
    fn stepped_back(&self, doc: &Keyset, primary: &str, now: f64) -> bool {
        let inner = &self.inner;
        if inner.config.legacy_reclaim() {
            return false;
        }
        let timing = doc.timing.unwrap_or(inner.config.timing);
        doc.rotation_claim.as_ref().is_some_and(|c| {
            c.has_tried(&inner.instance_id)
                && c.primary == primary
                && now < c.until.as_secs_f64() + 2.0 * rendezvous_window(&timing)
        })
    }

    /// When this instance may claim the rotation by age away from `primary`:
    /// its turn in the rendezvous window counted from when the rotation falls
    /// due or, after another instance's claim lapsed, from the claim's end;
    /// after its own claim, one whole window later (see the module).
    pub(super) fn rotation_turn(&self, doc: &Keyset, primary: &str) -> Option<f64> {
        let inner = &self.inner;
        let activated = doc.entry(primary)?.activate_at.as_secs_f64();
        let due = activated + inner.config.rotation_period?.as_secs_f64();
        let me = inner.instance_id.as_str();
        let timing = doc.timing.unwrap_or(inner.config.timing);
        let start = match doc.rotation_claim.as_ref().filter(|c| c.primary == primary) {
            None => due,
            // The legacy rule ignored its own claim (the fault a control reproduces).
            Some(c) if c.holder == me && inner.config.legacy_reclaim() => due,
            // It claimed this rotation and failed: every untried turn comes first.
            Some(c) if c.has_tried(me) && !inner.config.legacy_reclaim() => {
                c.until.as_secs_f64().max(due) + 2.0 * rendezvous_window(&timing)
            }
            Some(c) => c.until.as_secs_f64().max(due),
        };
        Some(start + turn_offset(&timing, me, &format!("rotation/{activated}")))
    }

    /// Writes `doc` with this instance's claim on the rotation away from
    /// `primary`: one compare-and-swap, tagged under the adopted document's
    /// MAC key (cached: no KMS call). An unauthenticated document carries no
    /// claims; its rotation goes ahead unclaimed.
    async fn claim(&self, doc: &Keyset, primary: &str, now: f64) -> Result<(), Error> {
        let inner = &self.inner;
        let Some(verified) = lock(&inner.adopted).clone() else {
            return Err(Error::Keyset(KeysetError::Conflict {
                expected: Some(doc.generation),
                found: None,
            }));
        };
        if verified.doc.generation != doc.generation {
            return Err(Error::Keyset(KeysetError::Conflict {
                expected: Some(doc.generation),
                found: Some(verified.doc.generation),
            }));
        }
        if !verified.is_authenticated() {
            return Ok(());
        }
        if !self.may_write_on(&verified.doc, now).await {
            return Err(Error::Keyset(KeysetError::BehindNewest(format!(
                "generation {} is behind the store's newest copy",
                verified.doc.generation
            ))));
        }
        let mut next = verified.doc.clone();
        next.generation = verified.doc.next_generation()?;
        // Earlier claimants of this rotation stay listed (the legacy rule forgot them).
        let tried = match &verified.doc.rotation_claim {
            Some(c) if c.primary == primary && !inner.config.legacy_reclaim() => c.tried_after(),
            _ => Vec::new(),
        };
        next.rotation_claim = Some(RotationClaim {
            holder: inner.instance_id.clone(),
            primary: primary.to_owned(),
            until: UnixTime::from_finite_secs(crate::keyset::document_time(
                now + CLAIM_TTL.as_secs_f64(),
            )),
            tried,
        });
        let stored = verified.seal_next(
            &next,
            UnixTime::from_finite_secs(now) + inner.config.keyset_validity,
        )?;
        write_keyset(&*inner.store, Some(doc.generation), &stored).await?;
        metrics::counter!("stateseal_rotation_claims_total").increment(1);
        tracing::info!(generation = next.generation, "claimed the due rotation");
        Ok(())
    }

    /// Rotates now (system or injected clock).
    ///
    /// # Errors
    /// As [`RotationScheduler::rotate_at`].
    pub async fn rotate(&self, mode: RotateMode) -> Result<Keyset, Error> {
        self.rotate_at(self.inner.clock.now(), mode).await
    }

    /// Adds a new key under the current primary's KEK with one compare-and-swap
    /// write (see [`crate::rotation::plan_rotation`]), then refreshes this instance.
    ///
    /// # Errors
    /// [`KeysetError::RotationInFlight`], [`KeysetError::Conflict`] (another writer won), provider errors.
    pub async fn rotate_at(&self, now: UnixTime, mode: RotateMode) -> Result<Keyset, Error> {
        let at = now;
        let now = at.as_secs_f64();
        let inner = &self.inner;
        // Never rotate on top of a document this instance would refuse to serve.
        let vet = |doc: &Keyset| self.vet(doc, now);
        let rotation = Rotation {
            fallback: inner.config.timing,
            timing: None,
            max_live_keys: usize::MAX,
            validity: inner.config.keyset_validity,
            generation_floor: false,
        };
        let doc = rotate_vetted(
            inner.store.as_ref(),
            &inner.registry,
            &inner.trust,
            &rotation,
            at,
            mode,
            &vet,
        )
        .await?
        .next;
        // The new key is known from now on; a failed refresh here does not undo the rotation.
        let _ = self.refresh_inner(now).await;
        Ok(doc)
    }
}
