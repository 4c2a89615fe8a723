//! The keyset store as the simulation sees it: one document object (and the
//! `.newest` copy beside it) with compare-and-swap, versions for conditional
//! reads, a per-object write rate limit, outages and per-instance partitions,
//! and counts of every read and write by simulated second.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use stateseal::keyset::{ConditionalLoad, StoreVersion, check_next_generation};
use stateseal::provider::BoxFuture;
use stateseal::{Error, KeysetStore, StoredKeyset};

use crate::series::{Bucket, Clock, Series};

/// A store's write rate limit per object and its latency per request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StoreProfile {
    /// Writes per second one object sustains.
    pub writes_per_second: f64,
    /// Writes one object takes at once.
    pub write_burst: f64,
    /// Seconds one request takes.
    pub latency: f64,
}

#[derive(Debug)]
struct Object {
    doc: Option<StoredKeyset>,
    version: u64,
    bucket: Bucket,
}

#[derive(Debug)]
struct State {
    objects: [Object; 2],
    outage: bool,
    partitioned: HashSet<usize>,
    /// Catch-up reads replay reads already counted: not counted again.
    replaying: bool,
    full_reads: Series,
    unchanged_reads: Series,
    writes: Series,
    refused_writes: u64,
    throttled_writes: u64,
    /// Reads and landed writes of the `.newest` copy.
    copy_reads: u64,
    copy_writes: u64,
    /// Requests of any kind (for latency).
    requests: u64,
}

/// The shared store; each instance reads and writes it through its own [`Handle`].
#[derive(Debug)]
pub(crate) struct StoreModel {
    state: Mutex<State>,
    clock: Clock,
}

/// What the store did over the run.
#[derive(Debug, Clone)]
pub(crate) struct StoreCounts {
    pub(crate) full_reads: Series,
    pub(crate) unchanged_reads: Series,
    pub(crate) writes: Series,
    pub(crate) refused_writes: u64,
    pub(crate) throttled_writes: u64,
    pub(crate) copy_reads: u64,
    pub(crate) copy_writes: u64,
}

const DOC: usize = 0;
const NEWEST: usize = 1;

impl StoreModel {
    pub(crate) fn new(profile: StoreProfile, clock: Clock) -> Arc<Self> {
        let object = || Object {
            doc: None,
            version: 0,
            bucket: Bucket::new(profile.writes_per_second, profile.write_burst),
        };
        Arc::new(Self {
            state: Mutex::new(State {
                objects: [object(), object()],
                outage: false,
                partitioned: HashSet::new(),
                replaying: false,
                full_reads: Series::default(),
                unchanged_reads: Series::default(),
                writes: Series::default(),
                refused_writes: 0,
                throttled_writes: 0,
                copy_reads: 0,
                copy_writes: 0,
                requests: 0,
            }),
            clock,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A handle for `instance` (`None`: the operator, never partitioned).
    pub(crate) fn handle(self: &Arc<Self>, instance: Option<usize>) -> Arc<dyn KeysetStore> {
        Arc::new(Handle {
            model: Arc::clone(self),
            instance,
            object: DOC,
            uri: "sim://keyset".into(),
        })
    }

    pub(crate) fn version(&self) -> u64 {
        self.lock().objects[DOC].version
    }

    /// The document in place (the operator's view, never counted).
    pub(crate) fn document(&self) -> Option<StoredKeyset> {
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

    pub(crate) fn reachable(&self, instance: usize) -> bool {
        let st = self.lock();
        !st.outage && !st.partitioned.contains(&instance)
    }

    pub(crate) fn set_replaying(&self, replaying: bool) {
        self.lock().replaying = replaying;
    }

    /// A refresh the simulation proved idle: one conditional read, unchanged.
    pub(crate) fn count_unchanged_read(&self, t: f64) {
        let mut st = self.lock();
        st.unchanged_reads.add(t);
        st.requests += 1;
    }

    /// Forgets what the operator's setup cost (before the run's second 0).
    pub(crate) fn reset_counts(&self) {
        let mut st = self.lock();
        st.full_reads = Series::default();
        st.unchanged_reads = Series::default();
        st.writes = Series::default();
        st.refused_writes = 0;
        st.throttled_writes = 0;
        st.copy_reads = 0;
        st.copy_writes = 0;
        st.requests = 0;
    }

    /// Requests so far, of any kind, counted or replayed.
    pub(crate) fn requests(&self) -> u64 {
        self.lock().requests
    }

    pub(crate) fn counts(&self) -> StoreCounts {
        let st = self.lock();
        StoreCounts {
            full_reads: st.full_reads.clone(),
            unchanged_reads: st.unchanged_reads.clone(),
            writes: st.writes.clone(),
            refused_writes: st.refused_writes,
            throttled_writes: st.throttled_writes,
            copy_reads: st.copy_reads,
            copy_writes: st.copy_writes,
        }
    }
}

#[derive(Debug)]
struct Handle {
    model: Arc<StoreModel>,
    instance: Option<usize>,
    object: usize,
    uri: String,
}

impl Handle {
    fn unreachable(&self, st: &State) -> Option<Error> {
        let cut = st.outage || self.instance.is_some_and(|i| st.partitioned.contains(&i));
        cut.then(|| Error::Store {
            uri: self.uri.clone(),
            problem: "unreachable (simulated outage or partition)".into(),
        })
    }

    fn read(&self, seen: Option<&StoreVersion>) -> Result<ConditionalLoad, Error> {
        let t = self.model.clock.now();
        let mut st = self.model.lock();
        st.requests += 1;
        if let Some(e) = self.unreachable(&st) {
            return Err(e);
        }
        let object = &st.objects[self.object];
        let version = StoreVersion::new(object.version.to_string());
        let unchanged = object.doc.is_some() && seen == Some(&version);
        let result = if unchanged {
            ConditionalLoad::Unchanged
        } else {
            ConditionalLoad::Current {
                document: object.doc.clone(),
                version: object.doc.as_ref().map(|_| version),
            }
        };
        if !st.replaying && self.object == NEWEST {
            st.copy_reads += 1;
        }
        if !st.replaying && self.object == DOC {
            if unchanged {
                st.unchanged_reads.add(t);
            } else {
                st.full_reads.add(t);
            }
        }
        Ok(result)
    }

    fn write(&self, expected: Option<u64>, doc: &StoredKeyset) -> Result<(), Error> {
        check_next_generation(&self.uri, expected, doc)?;
        let t = self.model.clock.now();
        let mut st = self.model.lock();
        st.requests += 1;
        if let Some(e) = self.unreachable(&st) {
            return Err(e);
        }
        // Every real store's compare-and-swap reads the object first (its
        // generation and ETag or KV version), then writes on that condition.
        if self.object == DOC {
            st.full_reads.add(t);
        } else {
            st.copy_reads += 1;
        }
        let object = &mut st.objects[self.object];
        let found = object.doc.as_ref().map(StoredKeyset::generation);
        if found != expected {
            if self.object == DOC {
                st.refused_writes += 1;
            }
            return Err(Error::Conflict { expected, found });
        }
        if !object.bucket.take(t) {
            if self.object == DOC {
                st.throttled_writes += 1;
            }
            return Err(Error::Store {
                uri: self.uri.clone(),
                problem: "429 Too Many Requests (the object's write rate limit)".into(),
            });
        }
        object.doc = Some(doc.clone());
        object.version += 1;
        if self.object == DOC {
            st.writes.add(t);
        } else {
            st.copy_writes += 1;
        }
        Ok(())
    }
}

impl KeysetStore for Handle {
    fn uri(&self) -> &str {
        &self.uri
    }

    fn load(&self) -> BoxFuture<'_, Result<Option<StoredKeyset>, Error>> {
        let read = self.read(None).map(|r| match r {
            ConditionalLoad::Current { document, .. } => document,
            _ => None,
        });
        Box::pin(async move { read })
    }

    fn load_if_changed<'a>(
        &'a self,
        seen: Option<&'a StoreVersion>,
    ) -> BoxFuture<'a, Result<ConditionalLoad, Error>> {
        let read = self.read(seen);
        Box::pin(async move { read })
    }

    fn compare_and_swap<'a>(
        &'a self,
        expected: Option<u64>,
        doc: &'a StoredKeyset,
    ) -> BoxFuture<'a, Result<(), Error>> {
        let written = self.write(expected, doc);
        Box::pin(async move { written })
    }

    fn newest_copy(&self) -> Option<Box<dyn KeysetStore>> {
        Some(Box::new(Self {
            model: Arc::clone(&self.model),
            instance: self.instance,
            object: NEWEST,
            uri: format!("{}.newest", self.uri),
        }))
    }
}
