//! The in-memory replay store: one process (tests, the demo, a single
//! instance). A fleet needs a shared store (`stateseal-redis`).
//!
//! Its records die with the process, so its epoch is its creation: a
//! restarted instance refuses every single-use state issued before it
//! started rather than accept a spent one again. (No skew allowance: the
//! states it can have recorded were verified by this process, and those it
//! is shown after a restart were issued before it started, on this host's clock.)

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::clock::{Clock, SystemClock, UnixTime};
use crate::envelope::SingleUse;
use crate::error::Error;
use crate::future::BoxFuture;

use super::{Recorded, ReplayStore};

/// Prune expired records once this many have been added since the last pruning.
const PRUNE_EVERY: usize = 1024;

/// Single-use records in this process's memory, each dropped once expired.
///
/// ```
/// use std::sync::Arc;
/// use stateseal::boundary::Boundary;
/// use stateseal::replay::MemoryReplayStore;
/// use stateseal::{Envelope, KeyRing, RequestIdentity, RingHandle, RingKey, Secret, TokenFormat};
///
/// let ring = Arc::new(RingHandle::new(KeyRing::from_keys(vec![Arc::new(RingKey::with_format(&Secret::generate()?, TokenFormat::V2))])?));
/// let envelope = Envelope::builder(ring, Some("bank")).build()?;
/// let boundary = Boundary::builder(Arc::new(envelope))
///     .replay_store(Arc::new(MemoryReplayStore::new()))
///     .single_use("tools/call", "transfer")
///     .build();
/// # Ok::<(), stateseal::Error>(())
/// ```
#[derive(Debug)]
pub struct MemoryReplayStore {
    clock: Arc<dyn Clock>,
    /// When this store was made: it holds every record since then only.
    epoch: UnixTime,
    records: Mutex<Records>,
}

#[derive(Debug, Default)]
struct Records {
    until: HashMap<String, UnixTime>,
    added: usize,
}

impl MemoryReplayStore {
    /// An empty store on the system clock.
    pub fn new() -> Self {
        Self::with_clock(Arc::new(SystemClock))
    }

    /// An empty store whose records expire on `clock`; its epoch is `clock`'s now.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        Self {
            epoch: clock.now(),
            clock,
            records: Mutex::new(Records::default()),
        }
    }

    /// Since when this store holds every record: its creation.
    pub fn epoch(&self) -> UnixTime {
        self.epoch
    }

    /// Records held now (expired ones included until the next pruning).
    pub fn len(&self) -> usize {
        self.lock().until.len()
    }

    /// Whether the store holds no record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Records> {
        // A panic elsewhere cannot leave the map half-written: keep using it.
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn record_at(&self, single_use: &SingleUse, now: UnixTime) -> Recorded {
        if now >= single_use.keep_until() {
            // No verifier accepts the state any more: nothing to keep.
            return Recorded::First;
        }
        // One process mints and verifies on one clock, so no skew allowance:
        // a state issued before this store was made came from an earlier
        // process. (The same tick is this process's: the coarse clock ticks
        // every few ms, and a restart takes longer.)
        if single_use.issued_at() < self.epoch {
            return Recorded::BeforeEpoch;
        }
        let mut r = self.lock();
        if r.added >= PRUNE_EVERY {
            r.until.retain(|_, until| now < *until);
            r.added = 0;
        }
        match r.until.get(single_use.key()) {
            Some(until) if now < *until => Recorded::Replay,
            _ => {
                r.until
                    .insert(single_use.key().to_owned(), single_use.keep_until());
                r.added += 1;
                Recorded::First
            }
        }
    }
}

impl Default for MemoryReplayStore {
    fn default() -> Self {
        Self::new()
    }
}

impl ReplayStore for MemoryReplayStore {
    fn record<'a>(&'a self, single_use: &'a SingleUse) -> BoxFuture<'a, Result<Recorded, Error>> {
        let first = self.record_at(single_use, self.clock.now());
        Box::pin(std::future::ready(Ok(first)))
    }

    fn uri(&self) -> &str {
        "memory://"
    }
}
