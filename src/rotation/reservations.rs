//! A fleet-wide seal budget per key, kept in the keyset itself.
//!
//! AES-GCM with random 96-bit nonces stays within NIST SP 800-38D's bound only
//! while one key seals at most 2^32 times, across every process that ever held
//! it. Counting in each process is not enough: counts die with the process, and
//! a fleet that autoscales or redeploys daily runs through many processes per
//! key. So an instance *reserves* seals before it makes them: it adds a block to
//! the entry's `seals_reserved` in the keyset document with the same
//! compare-and-swap write as a rotation, and reserves again before the block
//! runs out. A process that dies wastes the rest of its block (the count errs
//! high, never low); the scheduler rotates once `seals_reserved` reaches
//! `max_seals_per_key`. A process holding a reservation may run one block past
//! it (the store was down for longer than a block lasts; those seals are added
//! to the next reservation), and no further: past that it stops sealing with
//! the key until a reservation lands. One that has recorded none seals nothing. Only `v1.` keys have a budget: `v2.` keys
//! (XAES-256-GCM) derive a key per message and need none.

use std::collections::HashMap;
use std::sync::Mutex;

/// One process's reservations under one entry.
#[derive(Debug, Default, Clone, Copy)]
struct Lease {
    /// Seals this process has reserved in the keyset.
    granted: u64,
    /// Its seal count at the last refresh (the rate sets the block size).
    seen: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Reservations {
    leases: Mutex<HashMap<String, Lease>>,
}

impl Reservations {
    fn leases(&self) -> std::sync::MutexGuard<'_, HashMap<String, Lease>> {
        self.leases
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// How many seals to reserve now under `entry`, whose key this process has
    /// used `used` times; `None` while at least one block is left. A block is
    /// `min_block`, or twice the seals since the last refresh if more, so a
    /// busy instance reserves ahead of its own rate.
    pub(crate) fn due(&self, entry: &str, used: u64, min_block: u64) -> Option<u64> {
        let mut leases = self.leases();
        let lease = leases.entry(entry.to_owned()).or_default();
        let rate = used.saturating_sub(lease.seen);
        lease.seen = used;
        let block = min_block.max(rate.saturating_mul(2));
        if lease.granted.saturating_sub(used) >= block {
            return None;
        }
        // Seals already made beyond the reservation are reserved too, late.
        Some(used.saturating_sub(lease.granted).saturating_add(block))
    }

    /// Records a reservation the keyset accepted.
    pub(crate) fn granted(&self, entry: &str, amount: u64) {
        let mut leases = self.leases();
        let lease = leases.entry(entry.to_owned()).or_default();
        lease.granted = lease.granted.saturating_add(amount);
    }

    /// Seals this process has reserved under `entry` so far.
    pub(crate) fn granted_under(&self, entry: &str) -> u64 {
        self.leases().get(entry).map_or(0, |l| l.granted)
    }

    /// Forgets entries the keyset no longer holds.
    pub(crate) fn retain(&self, keep: impl Fn(&str) -> bool) {
        self.leases().retain(|entry, _| keep(entry));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserves_ahead_of_use_and_covers_overdrafts() {
        let r = Reservations::default();
        // A new process reserves before its first seal.
        assert_eq!(r.due("k_a", 0, 100), Some(100));
        r.granted("k_a", 100);
        assert_eq!(r.due("k_a", 0, 100), None);
        // 40 seals since: 60 left, less than a block: reserve one more.
        assert_eq!(r.due("k_a", 40, 100), Some(100));
        r.granted("k_a", 100);
        assert_eq!(r.due("k_a", 60, 100), None);
        // A burst of 500 seals (the store was down): the overdraft and a
        // bigger block (twice the rate) are reserved together.
        assert_eq!(r.due("k_a", 560, 100), Some(360 + 1000));
        r.granted("k_a", 1360);
        assert_eq!(r.due("k_a", 560, 100), None);
        r.retain(|e| e != "k_a");
        assert_eq!(r.due("k_a", 0, 100), Some(100), "forgotten");
    }
}
