//! The keyset store as the simulation sees it: one document object (and the
//! `.newest` copy beside it) with compare-and-swap, versions for conditional
//! reads, the service's request limits (reads per prefix, writes per object)
//! answered as the service answers them and retried as the client retries,
//! latency per request, outages and partitions, and counts of every read and
//! write by simulated second.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use stateseal::KeysetStore;

use crate::retry::RetryPolicy;
use crate::rng::Rng;
use crate::series::{Bucket, Series};
use crate::virtual_time::Clock;

mod handle;

use handle::Handle;

/// A store's request limits, its latency per request and its client's retries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StoreProfile {
    /// Writes per second one object sustains.
    pub writes_per_second: f64,
    /// Writes one object takes at once.
    pub write_burst: f64,
    /// Reads per second the document's prefix (or object) sustains; beyond
    /// it the service answers 503 SlowDown or 429.
    pub reads_per_second: f64,
    /// Seconds one request takes.
    pub latency: f64,
    /// How the store's client retries a throttled or failed request.
    pub retry: RetryPolicy,
}

#[derive(Debug)]
pub(crate) struct Object {
    pub(crate) doc: Option<stateseal::StoredKeyset>,
    pub(crate) version: u64,
    /// When (virtual time) the write of this version landed.
    pub(crate) written_at: f64,
    pub(crate) bucket: Bucket,
}

#[derive(Debug)]
pub(crate) struct State {
    pub(crate) objects: [Object; 2],
    /// Reads share one limit: the document and its copy sit under one prefix.
    pub(crate) reads: Bucket,
    pub(crate) outage: bool,
    pub(crate) partitioned: HashSet<usize>,
    /// Catch-up reads replay reads already counted: not counted again.
    pub(crate) replaying: bool,
    pub(crate) counts: StoreCounts,
    pub(crate) rng: Rng,
    /// The document version each instance's last read returned.
    pub(crate) served: HashMap<usize, u64>,
}

/// The shared store; each instance reads and writes it through its own handle.
#[derive(Debug)]
pub(crate) struct StoreModel {
    pub(crate) state: Mutex<State>,
    pub(crate) clock: Clock,
    pub(crate) profile: StoreProfile,
}

/// What the store did over the run.
#[derive(Debug, Clone, Default)]
pub(crate) struct StoreCounts {
    pub(crate) full_reads: Series,
    pub(crate) unchanged_reads: Series,
    pub(crate) writes: Series,
    pub(crate) refused_writes: u64,
    pub(crate) throttled_writes: u64,
    pub(crate) throttled_reads: u64,
    /// Reads and landed writes of the `.newest` copy.
    pub(crate) copy_reads: u64,
    pub(crate) copy_writes: u64,
}

pub(crate) const DOC: usize = 0;
pub(crate) const NEWEST: usize = 1;

impl StoreModel {
    pub(crate) fn new(profile: StoreProfile, clock: Clock, seed: u64) -> Arc<Self> {
        let object = || Object {
            doc: None,
            version: 0,
            written_at: f64::NEG_INFINITY,
            bucket: Bucket::new(profile.writes_per_second, profile.write_burst),
        };
        Arc::new(Self {
            state: Mutex::new(State {
                objects: [object(), object()],
                // One second's worth at once: the limits are per second.
                reads: Bucket::new(profile.reads_per_second, profile.reads_per_second),
                outage: false,
                partitioned: HashSet::new(),
                replaying: false,
                counts: StoreCounts::default(),
                rng: Rng::new(seed),
                served: HashMap::new(),
            }),
            clock,
            profile,
        })
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A handle for `instance` (`None`: the operator and the rotator job, never partitioned).
    pub(crate) fn handle(self: &Arc<Self>, instance: Option<usize>) -> Arc<dyn KeysetStore> {
        Arc::new(Handle::new(Arc::clone(self), instance, DOC))
    }

    pub(crate) fn version(&self) -> u64 {
        self.lock().objects[DOC].version
    }

    /// When the document in place was written (virtual time).
    pub(crate) fn written_at(&self) -> f64 {
        self.lock().objects[DOC].written_at
    }

    /// The document in place (the operator's view, never counted).
    pub(crate) fn document(&self) -> Option<stateseal::StoredKeyset> {
        self.lock().objects[DOC].doc.clone()
    }

    pub(crate) fn set_outage(&self, down: bool) {
        self.lock().outage = down;
    }

    pub(crate) fn set_partitioned(&self, instance: usize, cut: bool) {
        let mut st = self.lock();
        if cut {
            st.partitioned.insert(instance);
        } else {
            st.partitioned.remove(&instance);
        }
    }

    pub(crate) fn set_replaying(&self, replaying: bool) {
        self.lock().replaying = replaying;
    }

    /// Instance `i`'s conditional read at `t`, counted as answered
    /// "unchanged" when the document is still at `seen`, the store reachable
    /// and the read not throttled; else `false`, uncounted (the scheduler
    /// then makes the read itself). One lock: this is the run's hot path.
    pub(crate) fn idle_read(&self, i: usize, seen: Option<u64>, t: f64) -> bool {
        let mut st = self.lock();
        let idle = seen == Some(st.objects[DOC].version)
            && !st.outage
            && (st.partitioned.is_empty() || !st.partitioned.contains(&i))
            && st.reads.take(t);
        if idle {
            st.counts.unchanged_reads.add(t);
        }
        idle
    }

    /// The document version instance `i`'s last read returned.
    pub(crate) fn served(&self, i: usize) -> Option<u64> {
        self.lock().served.get(&i).copied()
    }

    /// Forgets what the operator's setup cost (before the run's second 0).
    pub(crate) fn reset_counts(&self) {
        self.lock().counts = StoreCounts::default();
    }

    pub(crate) fn counts(&self) -> StoreCounts {
        self.lock().counts.clone()
    }
}
