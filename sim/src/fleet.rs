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
    AesGcmCodec, Envelope, Error, KeyId, Keyset, KeysetStore, ManualClock, ProviderRegistry,
    RequestIdentity, RingHandle, RotationScheduler,
};

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

    fn member(&self, i: usize, epoch: u32) -> Result<Member, Error> {
        let ring = Arc::new(RingHandle::empty());
        let config = self
            .config
            .to_builder()
            .instance_id(format!("pod-{i}-{epoch}"))
            .build()?;
        let sched = RotationScheduler::new(
            config,
            self.store.handle(Some(i)),
            self.registry.clone(),
            ring.clone(),
            Arc::new(ManualClock::new(T0)),
        )?;
        let t = self.scenario.timing;
        let env = Envelope::builder(Arc::new(AesGcmCodec::new(ring.clone())), Some("svc"))
            .ttl(t.ttl)
            .max_skew(t.max_skew)
            .build()?;
        Ok(Member {
            sched,
            env,
            ring,
            epoch,
            started: false,
            failures: 0,
            seen_version: None,
            next_event: f64::NEG_INFINITY,
            last_idle: None,
            generation: None,
        })
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

    /// Before instance `i` loses the store, the idle refreshes it made since
    /// the scheduler last ran are replayed (uncounted) so its staleness clock
    /// starts where a real instance's would.
    fn catch_up(&mut self, i: usize) {
        let Some(t) = self.members[i].last_idle.take() else {
            return;
        };
        self.store.set_replaying(true);
        let now = self.clock.now();
        self.clock.set(t);
        let _ = self.rt.block_on(self.members[i].sched.refresh_at(T0 + t));
        self.clock.set(now);
        self.store.set_replaying(false);
    }

    fn refresh(&mut self, i: usize, t: f64) {
        let m = &self.members[i];
        let idle = !self.scenario.exact
            && m.started
            && m.failures == 0
            && m.seen_version == Some(self.store.version())
            && self.store.reachable(i)
            && T0 + t < m.next_event;
        if idle {
            self.store.count_unchanged_read(t);
            self.idle += 1;
            self.members[i].last_idle = Some(t);
            let wait = self.pacing.after_success(self.rng.unit());
            let epoch = self.members[i].epoch;
            self.push(
                t + self.scenario.store.latency + wait,
                Event::Refresh(i, epoch),
            );
            return;
        }
        self.driven += 1;
        let (kms_before, store_before) = (self.kms.total(), self.store_ops());
        let result = self.rt.block_on(self.members[i].sched.refresh_at(T0 + t));
        let latency = (self.kms.total() - kms_before) as f64 * self.scenario.kms.latency
            + (self.store_ops() - store_before) as f64 * self.scenario.store.latency;
        let done = t + latency;
        let version = self.store.version();
        let status = self.members[i].sched.status();
        let m = &mut self.members[i];
        m.last_idle = None;
        let wait = match result {
            Ok(_) => {
                m.failures = 0;
                m.seen_version = Some(version);
                m.next_event = m.sched.next_event_at();
                let first = !m.started;
                m.started = true;
                if first && m.epoch == 0 {
                    self.first_wave_ready += 1;
                    self.cold_start = self.cold_start.max(done);
                }
                if first {
                    self.pacing.first(self.rng.unit())
                } else {
                    self.pacing.after_success(self.rng.unit())
                }
            }
            Err(_) => {
                m.failures = m.failures.saturating_add(1);
                m.seen_version = None;
                let n = m.failures;
                self.pacing.after_failure(n, self.rng.unit())
            }
        };
        self.hold(i, status.generation);
        let epoch = self.members[i].epoch;
        self.push(done + wait, Event::Refresh(i, epoch));
        if self.store.version() != self.observed.as_ref().map_or(0, |o| o.0) {
            self.observe(t);
        }
        self.check_adoption(done);
    }

    fn store_ops(&self) -> u64 {
        self.store.requests()
    }

    /// Instance `i` now holds `generation` (or nothing).
    fn hold(&mut self, i: usize, generation: Option<u64>) {
        let m = &mut self.members[i];
        let before = if m.started { m.generation } else { None };
        m.generation = generation;
        let after = if m.started { generation } else { None };
        if before == after {
            return;
        }
        if let Some(g) = before
            && let Some(n) = self.holders.get_mut(&g)
        {
            *n -= 1;
            if *n == 0 {
                self.holders.remove(&g);
            }
        }
        if let Some(g) = after {
            *self.holders.entry(g).or_insert(0) += 1;
        }
    }

    /// A rotation is adopted once no running instance holds an older generation.
    fn check_adoption(&mut self, t: f64) {
        let oldest = self.holders.keys().next().copied();
        for (r, at_write) in self.rotations.iter_mut().zip(&self.restarts_at_write) {
            if r.adopted_after.is_none() && oldest.is_some_and(|g| g >= r.generation) {
                r.adopted_after = Some((t - r.written_at).max(0.0));
                r.kms_calls += self.kms.unwraps_of(&self.keyset_id, &r.entry);
                r.restarts_while_adopting = self.restarts - at_write;
            }
        }
    }

    /// Reads the document in place (uncounted) and records new rotations.
    fn observe(&mut self, t: f64) {
        let Some(stored) = self.store.document() else {
            return;
        };
        let (registry, trust) = &self.observer;
        let Ok(v) = self
            .rt
            .block_on(trust.open_ignoring_expiry(registry, "sim://keyset", &stored))
        else {
            return;
        };
        let doc = v.doc;
        let previous = self.observed.as_ref().map(|(_, d)| d.clone());
        for e in &doc.keys {
            if self.known_entries.insert(e.entry.clone()) {
                let generates = self.kms.generates();
                // The primary it replaces: the latest activation at t, still unsealing.
                let replaced = previous.as_ref().and_then(|p| {
                    p.keys
                        .iter()
                        .filter(|k| k.activate_at <= T0 + t)
                        .filter(|k| k.retire_at.is_none_or(|r| T0 + t < r))
                        .map(|k| k.activate_at)
                        .reduce(f64::max)
                });
                self.rotations.push(RotationRecord {
                    entry: e.entry.clone(),
                    generation: doc.generation,
                    written_at: t,
                    emergency: false,
                    due_at: replaced.map(|a| a + self.scenario.rotation_period - T0),
                    adopted_after: None,
                    kms_calls: generates - self.generates_at,
                    restarts_while_adopting: 0,
                });
                self.restarts_at_write.push(self.restarts);
                self.generates_at = generates;
            }
        }
        self.observed = Some((self.store.version(), doc));
    }

    fn restart(&mut self, i: usize, t: f64) -> Result<(), Error> {
        self.restarts += 1;
        self.hold(i, None);
        let epoch = self.members[i].epoch + 1;
        let mut m = self.member(i, epoch)?;
        m.started = false;
        self.members[i] = m;
        self.push(t + 1.0, Event::Refresh(i, epoch));
        Ok(())
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

    /// Key ids the fleet's document lets seal or unseal at `t`.
    fn live_kids(&self, t: f64) -> Vec<KeyId> {
        let Some((_, doc)) = &self.observed else {
            return Vec::new();
        };
        doc.keys
            .iter()
            .filter(|e| e.retire_at.is_none_or(|r| T0 + t < r))
            .filter_map(|e| e.kid)
            .collect()
    }

    fn round(&mut self, t: f64) {
        let gap = 1.0 / self.scenario.rounds_per_second;
        let next = t + gap * (0.5 + self.rng.unit());
        self.push(next, Event::Round);
        // The partitioned instance is probed on every round while it is cut off.
        let cut = self
            .scenario
            .partition
            .is_some_and(|(from, len)| (from..from + len).contains(&t));
        let mut candidates = vec![self.rng.below(self.members.len())];
        if cut {
            candidates.push(0);
        }
        for a in candidates {
            self.seal_on(a, t);
        }
    }

    fn seal_on(&mut self, a: usize, t: f64) {
        let m = &self.members[a];
        if !m.started {
            return;
        }
        let live = self.live_kids(t);
        let primary = m.ring.current().map(|r| r.primary().kid());
        match m.env.mint_at(&identity(), b"state", None, T0 + t) {
            Ok(token) => {
                let retired = primary.is_some_and(|k| !live.contains(&k));
                self.sealed_retired += u64::from(retired);
                if a == 0 && self.store_cut_for_zero() {
                    self.partitioned.0 += 1;
                    self.partitioned.1 += u64::from(retired);
                }
                let think = 1.0 + self.rng.unit() * self.scenario.timing.ttl / 2.0;
                let slot = match self.free_tokens.pop() {
                    Some(s) => {
                        self.tokens[s as usize] = Some(token);
                        s
                    }
                    None => {
                        self.tokens.push(Some(token));
                        (self.tokens.len() - 1) as u32
                    }
                };
                self.push(t + think, Event::Verify(slot));
            }
            Err(_) => self.refused += 1,
        }
    }

    fn store_cut_for_zero(&self) -> bool {
        !self.store.reachable(0)
    }

    fn verify(&mut self, token: &str, t: f64) {
        let n = self.members.len();
        // A random ready instance (a load balancer routes only to ready ones).
        for _ in 0..16 {
            let b = self.rng.below(n);
            let m = &self.members[b];
            if !(m.started && m.sched.is_ready()) {
                continue;
            }
            self.rounds += 1;
            if m.env.verify_at(&identity(), token, None, T0 + t).is_err() {
                self.rejected += 1;
            }
            return;
        }
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
