//! The event loop: instances, their start-ups, refreshes and restarts, the
//! rotator job, faults and traffic. Every store and KMS request of a
//! refresh is its own instant on the virtual clock (see `virtual_time`).

use crate::virtual_time::instant;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use stateseal::keyset::KeysetPins;
use stateseal::rotation::{
    KeysetTrust, RefreshPacing, RotateMode, SchedulerConfig, TrustPolicy, init_keyset,
    rotate_store_at,
};
use stateseal::{Envelope, Error, Keyset, KeysetStore, ProviderRegistry, RequestIdentity};

mod instances;
mod lifecycle;
mod record;
mod traffic;

use crate::kms_model::{KmsModel, KmsProfile, SCHEME};
use crate::report::{Report, RotationRecord};
use crate::rng::Rng;
use crate::scenario::{Scenario, TRAFFIC_FROM, Topology};
use crate::store_model::StoreModel;
use crate::virtual_time::{Clock, OPERATOR, SimTime, Task, run_now};

pub(crate) use instances::Member;
use lifecycle::RestartPlan;

/// Unix time of the run's second 0 (document times must be real dates).
const T0: f64 = 1_782_345_600.0;
const KEK: &str = "sim-kms://fleet/kek";

#[derive(Debug, Clone)]
enum Event {
    /// A server process starts (the member of this epoch).
    Start(usize, u32),
    Refresh(usize, u32),
    /// Instance `i`'s task is due to be polled again.
    Resume(usize, u32),
    /// Instance `i`'s restart in wave `w` of the rolling restarts.
    Restart(usize, u32),
    ColdRestart,
    /// The rotator job starts (its retry number within one scheduled run).
    Rotator(u32),
    RotatorResume,
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

/// A cold start of the whole fleet: when it began, instances not ready yet,
/// when the last became ready, and how many were ready later than
/// ready_timeout after they first started.
struct Wave {
    at: f64,
    pending: usize,
    done: f64,
    late: usize,
}

/// The rotator job's run in flight, and what the job has done.
#[derive(Default)]
struct RotatorJob {
    task: Option<Task>,
    attempt: u32,
    offset: f64,
    runs: u64,
    failures: u64,
}

pub(crate) struct Fleet {
    scenario: Scenario,
    clock: Clock,
    store: Arc<StoreModel>,
    kms: Arc<KmsModel>,
    registry: ProviderRegistry,
    operator: Arc<dyn KeysetStore>,
    observer: (ProviderRegistry, KeysetTrust),
    trust: TrustPolicy,
    config: SchedulerConfig,
    keyset_id: String,
    pacing: RefreshPacing,
    rng: Rng,
    members: Vec<Member>,
    /// Each instance's clock offset (its node's), kept across restarts.
    offsets: Vec<f64>,
    queue: BinaryHeap<Scheduled>,
    seq: u64,
    restart_plan: RestartPlan,
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
    waves: Vec<Wave>,
    /// Server processes that exited at ready_timeout, and the instances they were.
    exits: u64,
    exited: HashSet<usize>,
    rotator: RotatorJob,
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

/// The servers' configuration in `scenario`'s topology.
fn server_config(scenario: &Scenario, trust: &TrustPolicy) -> Result<SchedulerConfig, Error> {
    let writing = scenario.topology == Topology::Servers;
    #[allow(unused_mut)]
    let mut config = SchedulerConfig::builder()
        .timing(scenario.timing)
        .rotation_period(writing.then_some(Duration::from_secs_f64(scenario.rotation_period)))
        .renew_keyset(writing)
        .trust(trust.clone())
        .build()?;
    config.legacy_reclaim = scenario.legacy_reclaim;
    Ok(config)
}

impl Fleet {
    pub(crate) fn new(scenario: &Scenario) -> Result<Self, Error> {
        let clock = Arc::new(SimTime::default());
        let store = StoreModel::new(scenario.store, clock.clone(), scenario.seed ^ 0x5707e);
        let kms = KmsModel::new(
            scenario.kms,
            clock.clone(),
            scenario.seed ^ 0x4b45,
            scenario.failing_rotators,
        );
        let mut registry = ProviderRegistry::with_defaults();
        registry.register_provider(kms.clone());
        // The observer reads documents for the report through a KMS nobody counts.
        let unmetered = KmsModel::new(
            KmsProfile {
                quota_per_s: u64::MAX,
                latency: 0.0,
                retry: crate::retry::RetryPolicy::Never,
            },
            clock.clone(),
            0,
            0,
        );
        let mut observer = ProviderRegistry::with_defaults();
        observer.register_provider(unmetered);
        let operator = store.handle(None);
        clock.set(-60.0);
        let doc = {
            let (store, registry) = (operator.clone(), registry.clone());
            let timing = scenario.timing;
            run_now(
                &clock,
                OPERATOR,
                Box::pin(async move {
                    init_keyset(store.as_ref(), &registry, KEK, timing, instant(T0 - 60.0)).await
                }),
            )?
        };
        // The run counts the fleet, not the operator's setup before it.
        store.reset_counts();
        kms.reset_counts();
        let pins = KeysetPins::new(&doc.id, vec![format!("{SCHEME}://fleet/")])?;
        let trust = TrustPolicy {
            pins: Some(pins),
            ..TrustPolicy::default()
        };
        let config = server_config(scenario, &trust)?;
        let mut rng = Rng::new(scenario.seed);
        let offsets = (0..scenario.instances)
            .map(|_| (rng.unit() - 0.5) * scenario.clock_skew)
            .collect();
        let rotator = RotatorJob {
            offset: (rng.unit() - 0.5) * scenario.clock_skew,
            ..RotatorJob::default()
        };
        let mut fleet = Self {
            pacing: RefreshPacing::new(&scenario.timing, config.jitter),
            scenario: scenario.clone(),
            clock,
            store,
            kms,
            registry,
            operator,
            observer: (observer, KeysetTrust::new(trust.clone())),
            trust,
            config,
            keyset_id: doc.id.clone(),
            rng,
            members: Vec::with_capacity(scenario.instances),
            offsets,
            queue: BinaryHeap::new(),
            seq: 0,
            restart_plan: RestartPlan::default(),
            tokens: Vec::new(),
            free_tokens: Vec::new(),
            holders: BTreeMap::new(),
            observed: None,
            known_entries: doc.keys.iter().map(|e| e.entry.clone()).collect(),
            rotations: Vec::new(),
            restarts: 0,
            restarts_at_write: Vec::new(),
            generates_at: 0,
            waves: Vec::new(),
            exits: 0,
            exited: HashSet::new(),
            rotator,
            rounds: 0,
            rejected: 0,
            refused: 0,
            sealed_retired: 0,
            partitioned: (0, 0),
            driven: 0,
            idle: 0,
        };
        fleet.observe();
        fleet.generates_at = fleet.kms.generates();
        for i in 0..scenario.instances {
            let m = fleet.member(i, 0)?;
            fleet.members.push(m);
        }
        fleet.cold_start(0.0)?;
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

    /// Restarts, faults, the rotator job, the emergency rotation and the first round.
    fn plan(&mut self) {
        let s = self.scenario.clone();
        let span = s.span();
        if let Some(every) = s.restart_every {
            self.plan_restarts(every, span);
        }
        if let Some(at) = s.cold_restart_at {
            self.push(at, Event::ColdRestart);
        }
        if s.topology == Topology::Rotator {
            self.push(s.rotator_first, Event::Rotator(0));
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
            self.push(TRAFFIC_FROM, Event::Round);
        }
    }

    pub(crate) fn run(mut self) -> Result<Report, Error> {
        let span = self.scenario.span();
        while let Some(Scheduled { at, event, .. }) = self.queue.pop() {
            if at > span {
                break;
            }
            self.clock.set(at);
            let current = |f: &Self, i: usize, epoch: u32| f.members[i].epoch == epoch;
            match event {
                Event::Start(i, epoch) if current(&self, i, epoch) => self.start(i, at)?,
                Event::Refresh(i, epoch) if current(&self, i, epoch) => self.refresh(i, at)?,
                Event::Resume(i, epoch) if current(&self, i, epoch) => self.resume(i, at)?,
                Event::Start(..) | Event::Refresh(..) | Event::Resume(..) => {}
                Event::Restart(i, wave) => {
                    self.queue_restart(i, wave + 1);
                    self.restart(i, at)?;
                }
                Event::ColdRestart => self.cold_start(at)?,
                Event::Rotator(attempt) => self.rotator_start(attempt, at)?,
                Event::RotatorResume => self.rotator_resume(at)?,
                Event::Outage(down) => {
                    if down {
                        for i in 0..self.members.len() {
                            self.catch_up(i);
                        }
                    }
                    self.store.set_outage(down);
                }
                Event::Partition(cut) => {
                    for i in 0..self.scenario.partition_size {
                        if cut {
                            self.catch_up(i);
                        }
                        self.store.set_partitioned(i, cut);
                    }
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
        let (store, registry, config) = (
            self.operator.clone(),
            self.registry.clone(),
            self.config.clone(),
        );
        run_now(
            &self.clock,
            OPERATOR,
            Box::pin(async move {
                rotate_store_at(
                    store.as_ref(),
                    &registry,
                    &config,
                    instant(T0 + t),
                    RotateMode::Forced,
                )
                .await
            }),
        )?;
        self.observe();
        if let Some(r) = self.rotations.last_mut() {
            r.emergency = true;
            r.due_at = None;
        }
        Ok(())
    }

    /// An envelope for instance `i`'s ring.
    fn envelope(&self, ring: Arc<stateseal::RingHandle>) -> Result<Envelope, Error> {
        let t = self.scenario.timing;
        Envelope::builder(ring, Some("svc"))
            .ttl(t.ttl)
            .max_skew(t.max_skew)
            .build()
    }
}
