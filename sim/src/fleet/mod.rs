//! The event loop: instances, their refreshes, restarts, faults and traffic.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap, HashSet};
use std::sync::Arc;

use stateseal::keyset::KeysetPins;
use stateseal::rotation::{
    KeysetTrust, RefreshPacing, RotateMode, SchedulerConfig, TrustPolicy, init_keyset,
    rotate_store_at,
};
use stateseal::{
    Envelope, Error, Keyset, KeysetStore, ProviderRegistry, RequestIdentity, RingHandle,
    RotationScheduler,
};

mod instances;
mod record;
mod traffic;

use crate::kms_model::{KmsModel, KmsProfile, SCHEME};
use crate::report::{Report, RotationRecord};
use crate::rng::Rng;
use crate::scenario::Scenario;
use crate::series::SimTime;
use crate::store_model::StoreModel;

/// Unix time of the run's second 0 (document times must be real dates).
const T0: f64 = 1_782_345_600.0;
const KEK: &str = "sim-kms://fleet/kek";

#[derive(Debug, Clone)]
enum Event {
    Refresh(usize, u32),
    Restart(usize),
    Outage(bool),
    Partition(bool),
    Emergency,
    Round,
    /// A sealed state (its index in `Fleet::tokens`) comes back.
    Verify(u32),
}

struct Scheduled {
    at: f64,
    seq: u64,
    event: Event,
}

impl PartialEq for Scheduled {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Scheduled {}
impl PartialOrd for Scheduled {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Scheduled {
    // Earliest first out of a max-heap.
    fn cmp(&self, o: &Self) -> Ordering {
        o.at.total_cmp(&self.at).then(o.seq.cmp(&self.seq))
    }
}

struct Member {
    sched: RotationScheduler,
    env: Envelope,
    ring: Arc<RingHandle>,
    epoch: u32,
    started: bool,
    failures: u32,
    /// Store version of the last successful scheduler refresh.
    seen_version: Option<u64>,
    next_event: f64,
    /// The last idle refresh counted without the scheduler, if after the last driven one.
    last_idle: Option<f64>,
    generation: Option<u64>,
}

pub(crate) struct Fleet {
    scenario: Scenario,
    clock: Arc<SimTime>,
    store: Arc<StoreModel>,
    kms: Arc<KmsModel>,
    registry: ProviderRegistry,
    operator: Arc<dyn KeysetStore>,
    observer: (ProviderRegistry, KeysetTrust),
    config: SchedulerConfig,
    keyset_id: String,
    pacing: RefreshPacing,
    rt: tokio::runtime::Runtime,
    rng: Rng,
    members: Vec<Member>,
    queue: BinaryHeap<Scheduled>,
    seq: u64,
    /// States in flight, by slot (kept out of the queue: small events move fast).
    tokens: Vec<Option<String>>,
    free_tokens: Vec<u32>,
    /// Running (started) instances per generation they hold.
    holders: BTreeMap<u64, usize>,
    /// The document as last observed, and the entries seen so far.
    observed: Option<(u64, Keyset)>,
    known_entries: HashSet<String>,
    rotations: Vec<RotationRecord>,
    /// Restarts so far, and their count when each rotation was written.
    restarts: u64,
    restarts_at_write: Vec<u64>,
    /// Generates before each rotation's write, for its KMS cost.
    generates_at: u64,
    first_wave_ready: usize,
    cold_start: f64,
    rounds: u64,
    rejected: u64,
    refused: u64,
    sealed_retired: u64,
    partitioned: (u64, u64),
    driven: u64,
    idle: u64,
}

fn identity() -> RequestIdentity {
    RequestIdentity::from_json("tools/call", br#"{"name":"t","arguments":{}}"#)
        .unwrap_or_else(|_| unreachable!("a fixed, valid request"))
}

impl Fleet {
    pub(crate) fn new(scenario: &Scenario) -> Result<Self, Error> {
        let clock = Arc::new(SimTime::default());
        let store = StoreModel::new(scenario.store, clock.clone());
        let kms = KmsModel::new(scenario.kms, clock.clone());
        let mut registry = ProviderRegistry::with_defaults();
        registry.register_provider(kms.clone());
        // The observer reads documents for the report through a KMS nobody counts.
        let unmetered = KmsModel::new(
            KmsProfile {
                quota: u64::MAX,
                window: 1.0,
                latency: 0.0,
            },
            clock.clone(),
        );
        let mut observer = ProviderRegistry::with_defaults();
        observer.register_provider(unmetered);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .map_err(|e| Error::Config(format!("simulation runtime: {e}")))?;
        let operator = store.handle(None);
        clock.set(-60.0);
        let doc = rt.block_on(init_keyset(
            operator.as_ref(),
            &registry,
            KEK,
            scenario.timing,
            T0 - 60.0,
        ))?;
        // The run counts the fleet, not the operator's setup before it.
        store.reset_counts();
        kms.reset_counts();
        let pins = KeysetPins::new(&doc.id, vec![format!("{SCHEME}://fleet/")])?;
        let trust = TrustPolicy {
            pins: Some(pins),
            ..TrustPolicy::default()
        };
        let config = SchedulerConfig::builder()
            .timing(scenario.timing)
            .rotation_period(Some(scenario.rotation_period))
            .trust(trust.clone())
            .build()?;
        let mut fleet = Self {
            pacing: RefreshPacing::new(&scenario.timing, config.jitter),
            scenario: scenario.clone(),
            clock,
            store,
            kms,
            registry,
            operator,
            observer: (observer, KeysetTrust::new(trust)),
            config,
            keyset_id: doc.id.clone(),
            rt,
            rng: Rng::new(scenario.seed),
            members: Vec::with_capacity(scenario.instances),
            queue: BinaryHeap::new(),
            seq: 0,
            tokens: Vec::new(),
            free_tokens: Vec::new(),
            holders: BTreeMap::new(),
            observed: None,
            known_entries: doc.keys.iter().map(|e| e.entry.clone()).collect(),
            rotations: Vec::new(),
            restarts: 0,
            restarts_at_write: Vec::new(),
            generates_at: 0,
            first_wave_ready: 0,
            cold_start: 0.0,
            rounds: 0,
            rejected: 0,
            refused: 0,
            sealed_retired: 0,
            partitioned: (0, 0),
            driven: 0,
            idle: 0,
        };
        fleet.observe(-60.0);
        fleet.generates_at = fleet.kms.generates();
        for i in 0..scenario.instances {
            let m = fleet.member(i, 0)?;
            fleet.members.push(m);
            let at = fleet.rng.unit() * scenario.start_spread;
            fleet.push(at, Event::Refresh(i, 0));
        }
        fleet.plan();
        Ok(fleet)
    }

    fn push(&mut self, at: f64, event: Event) {
        self.seq += 1;
        self.queue.push(Scheduled {
            at,
            seq: self.seq,
            event,
        });
    }

    /// Restarts, faults, the emergency rotation and the first round.
    fn plan(&mut self) {
        let s = self.scenario.clone();
        let span = s.span();
        if let Some(every) = s.restart_every {
            let mut at = every;
            while at < span {
                for i in 0..s.instances {
                    let offset = s.restart_window * i as f64 / s.instances as f64;
                    self.push(at + offset, Event::Restart(i));
                }
                at += every;
            }
        }
        if let Some((from, len)) = s.store_outage {
            self.push(from, Event::Outage(true));
            self.push(from + len, Event::Outage(false));
        }
        if let Some((from, len)) = s.partition {
            self.push(from, Event::Partition(true));
            self.push(from + len, Event::Partition(false));
        }
        if let Some(at) = s.emergency_at {
            self.push(at, Event::Emergency);
        }
        if s.rounds_per_second > 0.0 {
            self.push(60.0, Event::Round);
        }
    }

    pub(crate) fn run(mut self) -> Result<Report, Error> {
        let span = self.scenario.span();
        while let Some(Scheduled { at, event, .. }) = self.queue.pop() {
            if at > span {
                break;
            }
            self.clock.set(at);
            match event {
                Event::Refresh(i, epoch) if self.members[i].epoch == epoch => self.refresh(i, at),
                Event::Refresh(..) => {}
                Event::Restart(i) => self.restart(i, at)?,
                Event::Outage(down) => {
                    if down {
                        for i in 0..self.members.len() {
                            self.catch_up(i);
                        }
                    }
                    self.store.set_outage(down);
                }
                Event::Partition(cut) => {
                    if cut {
                        self.catch_up(0);
                    }
                    self.store.set_partitioned(0, cut);
                }
                Event::Emergency => self.emergency(at)?,
                Event::Round => self.round(at),
                Event::Verify(slot) => {
                    if let Some(token) = self.tokens[slot as usize].take() {
                        self.free_tokens.push(slot);
                        self.verify(&token, at);
                    }
                }
            }
        }
        Ok(self.report())
    }

    fn emergency(&mut self, t: f64) -> Result<(), Error> {
        self.rt.block_on(rotate_store_at(
            self.operator.as_ref(),
            &self.registry,
            &self.config,
            T0 + t,
            RotateMode::Forced,
        ))?;
        self.observe(t);
        if let Some(r) = self.rotations.last_mut() {
            r.emergency = true;
            r.due_at = None;
        }
        Ok(())
    }

    fn report(&self) -> Report {
        let store = self.store.counts();
        let kms = self.kms.counts();
        let span = self.scenario.span();
        let total_reads = store.full_reads.total() + store.unchanged_reads.total();
        let reads_peak = store.full_reads.peak_with(&store.unchanged_reads);
        Report {
            instances: self.scenario.instances,
            span,
            rotations: self.rotations.clone(),
            rounds: self.rounds,
            rejected_rounds: self.rejected,
            refused_to_start: self.refused,
            reads_peak,
            reads_mean: total_reads as f64 / span,
            full_reads: store.full_reads.total(),
            unchanged_reads: store.unchanged_reads.total(),
            newest_copy: (store.copy_reads, store.copy_writes),
            writes_peak: store.writes.peak(),
            writes_mean: store.writes.mean(span),
            writes: store.writes.total(),
            writes_throttled: store.throttled_writes,
            writes_conflicted: store.refused_writes,
            kms_calls: kms.calls.total(),
            kms_peak_per_s: kms.calls.peak(),
            kms_peak_window: kms.peak_window,
            kms_quota: (self.kms.profile().quota, self.kms.profile().window),
            kms_throttled: kms.throttled,
            cold_start_s: if self.first_wave_ready == self.scenario.instances {
                self.cold_start
            } else {
                f64::INFINITY
            },
            partitioned_sealed: self.partitioned,
            sealed_with_retired: self.sealed_retired,
            refreshes: (self.driven, self.idle),
        }
    }
}
