//! Rotations a scheduler writes: on demand, or when the primary is due by age
//! or by the fleet's seal count.

use super::RotationScheduler;
use crate::error::Error;
use crate::keyset::Keyset;
use crate::rotation::operations::{Rotation, rotate_vetted};
use crate::rotation::timeline::{Phase, RotateMode, ring_at};

impl RotationScheduler {
    /// Rotates when the primary is due, judged on the document just loaded.
    pub(super) async fn maybe_auto_rotate(&self, doc: &Keyset, now: f64) {
        let Some(ring) = self.inner.ring.current() else {
            return;
        };
        let Some(plan) = ring_at(doc, now).filter(|p| p.phase == Phase::Three) else {
            return;
        };
        let Some(primary) = doc.entry(&plan.primary) else {
            return;
        };
        let by_age = self
            .inner
            .config
            .rotation_period
            .is_some_and(|p| now - primary.activate_at >= p);
        // The fleet's reservations under the key, or (reservations off) this process's own seals.
        let max = self.inner.config.max_seals_per_key;
        let by_count = primary.alg == crate::key::TokenFormat::V1
            && (primary.seals_reserved >= max || ring.primary().seal_count() >= max);
        if !(by_age || by_count) {
            return;
        }
        match self.rotate_at(now, RotateMode::Scheduled).await {
            Ok(doc) => tracing::info!(
                generation = doc.generation,
                by_age,
                by_count,
                "rotated the keyset automatically"
            ),
            // Another instance won the race, or started a rotation: nothing to do.
            Err(Error::Conflict { .. } | Error::RotationInFlight(_)) => {}
            Err(e) => tracing::warn!(error = %e, "automatic rotation failed"),
        }
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
    /// [`Error::RotationInFlight`], [`Error::Conflict`] (another writer won), provider errors.
    pub async fn rotate_at(&self, now: f64, mode: RotateMode) -> Result<Keyset, Error> {
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
            now,
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
