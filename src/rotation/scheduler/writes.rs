//! What a scheduler that may write the keyset writes besides rotations:
//! seal reservations for `v1.` keys, and renewals of the document's freshness.

use super::adoption::REJUDGE_AFTER;
use super::{RotationScheduler, lock};
use crate::clock::UnixTime;
use crate::error::{Error, KeysetError};
use crate::key::{RingKey, TokenFormat};
use crate::keyset::Keyset;
use crate::rotation::newest::{server_floor, write_keyset};
use crate::rotation::trust::VerifiedKeyset;

/// The longest wait between reservation attempts after the store refused one, in R.
const RESERVATION_BACKOFF_CAP_R: f64 = 8.0;

impl RotationScheduler {
    /// Whether this instance may write on `doc` at `now`: not when the store's
    /// newest copy shows a later generation (a restored backup; see
    /// `newest::server_floor`). Refused once with a warning, then held for
    /// that generation for a while at no further read; a write that raced
    /// another (the copy moved on with the document) is simply not made now.
    pub(super) async fn may_write_on(&self, doc: &Keyset, now: f64) -> bool {
        let inner = &self.inner;
        if lock(&inner.behind_newest).is_some_and(|(g, until)| g == doc.generation && now < until) {
            return false;
        }
        match server_floor(&*inner.store, &inner.registry, &inner.trust, doc).await {
            Err(e @ Error::Keyset(KeysetError::BehindNewest(_))) => {
                tracing::warn!(store = %inner.store.uri(), error = %e, "not writing the keyset");
                *lock(&inner.behind_newest) = Some((doc.generation, now + REJUDGE_AFTER));
                false
            }
            Err(Error::Keyset(KeysetError::Conflict { .. })) => false,
            _ => true,
        }
    }

    /// When this instance renews `verified` (`renew_keyset`): once less than
    /// half its validity is left, at this instance's rendezvous turn, so a
    /// fleet of writers renews it once, not once per instance.
    pub(super) fn renewal_turn(&self, verified: &VerifiedKeyset) -> Option<f64> {
        let inner = &self.inner;
        if !(inner.config.renew_keyset && verified.is_authenticated()) {
            return None;
        }
        let expires_at = verified.expires_at?.as_secs_f64();
        let due = expires_at - inner.config.keyset_validity.as_secs_f64() / 2.0;
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
        let reservation = self
            .reservation_due(&mut next)
            .filter(|(entry, ..)| self.reservations_may_retry(entry, now));
        let renewal = self.renewal_turn(verified).is_some_and(|turn| now >= turn);
        if reservation.is_none() && !renewal {
            return;
        }
        if !verified.is_authenticated() {
            // Nothing writes an unauthenticated document; `stateseal keyset upgrade` converts it.
            return;
        }
        if !self.may_write_on(doc, now).await {
            return;
        }
        let written = async {
            next.generation = doc.next_generation()?;
            let stored = verified.seal_next(
                &next,
                UnixTime::from_finite_secs(now) + inner.config.keyset_validity,
            )?;
            write_keyset(&*inner.store, Some(doc.generation), &stored).await
        }
        .await;
        match (written, reservation) {
            (Ok(()), Some((entry, amount, reserved))) => {
                // The next refresh loads the new generation like any other write.
                inner.reservations.granted(&entry, amount);
                *lock(&inner.reservation_backoff) = None;
                if let Some(ring) = inner.ring.current() {
                    self.limit_seals(ring.primary(), &entry);
                    // Recorded now: a ring that seals may say so.
                    if ring.seals() {
                        self.set_ready(true);
                    }
                }
                metrics::gauge!("stateseal_primary_key_seals_reserved").set(reserved as f64);
            }
            (Ok(()), None) => {
                *lock(&inner.reservation_backoff) = None;
                metrics::counter!("stateseal_keyset_renewals_total").increment(1);
            }
            (Err(e), reserved) => {
                metrics::counter!("stateseal_keyset_write_failures_total").increment(1);
                if let Some((entry, ..)) = reserved {
                    metrics::counter!("stateseal_seal_reservation_failures_total").increment(1);
                    if !matches!(e, Error::Keyset(KeysetError::Conflict { .. })) {
                        self.reservation_refused(&entry, now, &e);
                        return;
                    }
                }
                tracing::warn!(store = %inner.store.uri(), error = %e, "could not write the keyset (seal reservation or renewal); sealing goes on, the next refresh tries again");
            }
        }
    }

    /// Sets the seal budget of `key`, the primary of `entry`: a `v1.` key may
    /// seal what this process reserved under the entry plus one block once it
    /// holds a reservation, and nothing before (a process that cannot write
    /// the keyset seals nothing unrecorded). `v2.` keys, and every key with
    /// reservations off, have no budget.
    pub(super) fn limit_seals(&self, key: &RingKey, entry: &str) {
        let limit = match self.inner.config.seal_reservation_block {
            Some(block) if key.format() == TokenFormat::V1 => {
                let granted = self.inner.reservations.granted_under(entry);
                // The block past the reservation rides out a store outage, and is
                // recorded late; a process that has recorded nothing (a read-only
                // server) may not run ahead of the count at all.
                if granted == 0 {
                    0
                } else {
                    granted.saturating_add(block)
                }
            }
            _ => u64::MAX,
        };
        key.set_seal_limit(limit);
    }

    /// Whether a seal reservation under `entry` may be written at `now`: not
    /// while backing off after the store refused one under it (see
    /// [`Self::reservation_refused`]).
    fn reservations_may_retry(&self, entry: &str, now: f64) -> bool {
        lock(&self.inner.reservation_backoff)
            .as_ref()
            .is_none_or(|(e, until, _)| e != entry || now >= *until)
    }

    /// The store answered this refresh's read but refused the reservation
    /// under `entry` (not a lost race): a read-only server on a keyset whose
    /// primary is a `v1.` key, or a store in trouble (the two look alike). It
    /// seals nothing unrecorded with that key, and tries again after R, 2R,
    /// 4R, then every 8R, not at every refresh; any landed write, or a new
    /// primary, ends the backoff.
    fn reservation_refused(&self, entry: &str, now: f64, e: &Error) {
        let inner = &self.inner;
        let mut backoff = lock(&inner.reservation_backoff);
        let failures = backoff
            .as_ref()
            .filter(|(e, ..)| e == entry)
            .map_or(0, |(.., n)| *n)
            .saturating_add(1);
        let r = inner.config.timing.refresh_interval.as_secs_f64();
        let wait = (r * 2f64.powi(failures.min(16) as i32 - 1)).min(RESERVATION_BACKOFF_CAP_R * r);
        *backoff = Some((entry.to_owned(), now + wait, failures));
        tracing::warn!(
            store = %inner.store.uri(),
            error = %e,
            retry_in_s = wait,
            "could not record a seal reservation for the v1 primary key: this process seals nothing with it beyond what it recorded and is not ready until it has recorded one; `stateseal rotate` gives the keyset a v2 key, which needs no reservations (read-only servers need v2 keys)"
        );
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
