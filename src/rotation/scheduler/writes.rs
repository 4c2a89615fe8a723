//! What a scheduler that may write the keyset writes besides rotations:
//! seal reservations for `v1.` keys, and renewals of the document's freshness.

use super::{RotationScheduler, lock};
use crate::key::{RingKey, TokenFormat};
use crate::keyset::Keyset;
use crate::rotation::newest::write_keyset;
use crate::rotation::trust::VerifiedKeyset;

impl RotationScheduler {
    /// When this instance renews `verified` (`renew_keyset`): once less than
    /// half its validity is left, at this instance's rendezvous turn, so a
    /// fleet of writers renews it once, not once per instance.
    pub(super) fn renewal_turn(&self, verified: &VerifiedKeyset) -> Option<f64> {
        let inner = &self.inner;
        if !(inner.config.renew_keyset && verified.is_authenticated()) {
            return None;
        }
        let expires_at = verified.expires_at?;
        let due = expires_at - inner.config.keyset_validity / 2.0;
        let timing = verified.doc.timing.unwrap_or(inner.config.timing);
        let what = format!("renewal/{expires_at}");
        Some(due + super::rotations::turn_offset(&timing, &inner.instance_id, &what))
    }

    /// Writes the next generation of `verified` (tagged under its MAC key) when
    /// this process's seal reservation runs low (see `reservations`) or the
    /// document has less than half its validity left (`renew_keyset`). A failed
    /// write is logged and tried again at the next refresh; sealing goes on.
    pub(super) async fn write_if_due(&self, verified: &VerifiedKeyset, now: f64) {
        let inner = &self.inner;
        let doc = &verified.doc;
        let mut next = doc.clone();
        let reservation = self.reservation_due(&mut next);
        let renewal = self.renewal_turn(verified).is_some_and(|turn| now >= turn);
        if reservation.is_none() && !renewal {
            return;
        }
        if !verified.is_authenticated() {
            // Nothing writes an unauthenticated document; `stateseal keyset upgrade` converts it.
            return;
        }
        let written = async {
            next.generation = doc.next_generation()?;
            let stored = verified.seal_next(&next, now + inner.config.keyset_validity)?;
            write_keyset(&*inner.store, Some(doc.generation), &stored).await
        }
        .await;
        let reserving = reservation.is_some();
        match (written, reservation) {
            (Ok(()), Some((entry, amount, reserved))) => {
                // The next refresh loads the new generation like any other write.
                inner.reservations.granted(&entry, amount);
                if let Some(ring) = inner.ring.current() {
                    self.limit_seals(ring.primary(), &entry);
                }
                metrics::gauge!("stateseal_primary_key_seals_reserved").set(reserved as f64);
            }
            (Ok(()), None) => {
                metrics::counter!("stateseal_keyset_renewals_total").increment(1);
            }
            (Err(e), _) => {
                metrics::counter!("stateseal_keyset_write_failures_total").increment(1);
                if reserving {
                    metrics::counter!("stateseal_seal_reservation_failures_total").increment(1);
                }
                tracing::warn!(store = %inner.store.uri(), error = %e, "could not write the keyset (seal reservation or renewal); sealing goes on, the next refresh tries again");
            }
        }
    }

    /// Sets the seal budget of `key`, the primary of `entry`: a `v1.` key may
    /// seal what this process reserved under the entry plus one block, and
    /// then stops until a reservation lands (a process that cannot write the
    /// keyset gets the one block). `v2.` keys, and every key with
    /// reservations off, have no budget.
    pub(super) fn limit_seals(&self, key: &RingKey, entry: &str) {
        let limit = match self.inner.config.seal_reservation_block {
            Some(block) if key.format() == TokenFormat::V1 => self
                .inner
                .reservations
                .granted_under(entry)
                .saturating_add(block),
            _ => u64::MAX,
        };
        key.set_seal_limit(limit);
    }

    /// Adds this process's next seal reservation to `next` when one is due:
    /// (entry, amount, new total).
    fn reservation_due(&self, next: &mut Keyset) -> Option<(String, u64, u64)> {
        let inner = &self.inner;
        let min_block = inner.config.seal_reservation_block?;
        inner
            .reservations
            .retain(|entry| next.entry(entry).is_some());
        let entry = lock(&inner.primary_entry).clone()?;
        let e = next.keys.iter_mut().find(|e| e.entry == entry)?;
        // Only v1 keys carry a seal budget.
        if e.alg != TokenFormat::V1 {
            return None;
        }
        let used = inner.ring.current().map(|r| r.primary().seal_count())?;
        let amount = inner.reservations.due(&entry, used, min_block)?;
        e.seals_reserved = e.seals_reserved.saturating_add(amount);
        Some((entry, amount, e.seals_reserved))
    }
}
