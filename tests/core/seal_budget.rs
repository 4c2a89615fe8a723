//! The random-nonce bound across a fleet that restarts and grows: instances
//! reserve seals in the keyset before they make them, so the keyset's count
//! for a key is never below the seals actually made under it (by live and by
//! dead processes), and the fleet rotates once that count reaches the limit,
//! although no single process ever comes close to it.

use stateseal_testkit::keysets;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use stateseal::provider::WrapContext;
use stateseal::rotation::{SchedulerConfig, Timing};
use stateseal::{
    AesGcmCodec, KeyProvider, KeyRing, KeysetStore, LocalProvider, ManualClock, RingHandle,
    RotationScheduler, StateCodec,
};

use crate::fleet::{local_keyset, local_registry};

const T0: f64 = 1_782_345_600.0;
const LIMIT: u64 = 20_000;
const MAX_RATE: u64 = 300;

struct Process {
    sched: RotationScheduler,
    codec: AesGcmCodec,
    ring: Arc<RingHandle>,
}

fn config() -> SchedulerConfig {
    SchedulerConfig::builder()
        .timing(Timing::new(1.0, 1.0, 10.0))
        .rotation_period(None)
        .max_seals_per_key(LIMIT)
        .seal_reservation_block(Some(400))
        .build()
        .expect("config")
}

fn start(store: &Arc<dyn KeysetStore>) -> Process {
    let ring = Arc::new(RingHandle::empty());
    let sched = RotationScheduler::new(
        config(),
        store.clone(),
        local_registry(),
        ring.clone(),
        Arc::new(ManualClock::new(T0)),
    )
    .expect("scheduler");
    Process {
        sched,
        codec: AesGcmCodec::new(ring.clone()),
        ring,
    }
}

/// A small deterministic generator, so a failure replays.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

async fn kid_of(store: &Arc<dyn KeysetStore>, entry: &str) -> String {
    let doc = keysets::content(&**store, &local_registry()).await;
    let e = doc.entry(entry).expect("entry");
    let secret = LocalProvider::new()
        .unwrap(
            &e.kek,
            &e.wrapped,
            WrapContext {
                keyset_id: &doc.id,
                entry_id: &e.entry,
            },
        )
        .await
        .expect("unwrap");
    KeyRing::from_secrets(&[secret]).expect("ring").kids()[0].to_hex()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seal_budget_survives_restarts_and_fleet_growth() {
    let registry = local_registry();
    let (dir, store) = local_keyset("seal-budget", &registry, config().timing, T0).await;
    let mut rng = Rng(0x5eed_5eed);
    let mut fleet: Vec<Process> = (0..3).map(|_| start(&store)).collect();
    // Seals made under each key (by kid), by every process that ever lived.
    let mut made: HashMap<String, u64> = HashMap::new();
    // The most any one process sealed under each key.
    let mut most_by_one: HashMap<String, u64> = HashMap::new();
    let mut kids: HashMap<String, String> = HashMap::new();
    let mut restarts = 0;
    for tick in 0..300u32 {
        let now = T0 + f64::from(tick);
        // Churn: restarts (a process's counts die with it) and growth.
        if rng.below(4) == 0 {
            let i = rng.below(fleet.len() as u64) as usize;
            fleet[i] = start(&store);
            restarts += 1;
        }
        if fleet.len() < 8 && rng.below(20) == 0 {
            fleet.push(start(&store));
        }
        for p in &fleet {
            p.sched.refresh_at(now).await.expect("refresh");
        }
        for p in &fleet {
            let ring = p.ring.current().expect("ready");
            let kid = ring.primary().kid().to_hex();
            let n = rng.below(MAX_RATE + 1);
            for _ in 0..n {
                p.codec.seal(b"x").expect("seal");
            }
            *made.entry(kid.clone()).or_default() += n;
            let by_one = most_by_one.entry(kid).or_default();
            *by_one = (*by_one).max(ring.primary().seal_count());
        }
        // The keyset never counts fewer seals than were made.
        let doc = keysets::content(&*store, &registry).await;
        for e in &doc.keys {
            if !kids.contains_key(&e.entry) {
                kids.insert(e.entry.clone(), kid_of(&store, &e.entry).await);
            }
            let made_here = made.get(&kids[&e.entry]).copied().unwrap_or(0);
            assert!(
                made_here <= e.seals_reserved,
                "tick {tick}: entry {} made {made_here} seals, reserved {}",
                e.entry,
                e.seals_reserved
            );
        }
    }
    let primaries: HashSet<&String> = made.keys().collect();
    assert!(primaries.len() >= 3, "rotated by count: {made:?}");
    assert!(restarts > 50, "{restarts}");
    // No key sealed far past the limit: rotation starts at the limit, and the old
    // key seals on for at most the propagation window (P = 3 s) and a refresh.
    let window = 5 * 8 * MAX_RATE;
    for (kid, n) in &made {
        assert!(*n <= LIMIT + window, "{kid}: {n} seals");
    }
    // What per-process counting would have missed: keys that passed the limit
    // while no single process came near it.
    let missed = made
        .iter()
        .filter(|(kid, n)| **n >= LIMIT && most_by_one[*kid] < LIMIT / 2)
        .count();
    assert!(
        missed >= 1,
        "made {made:?}, most by one process {most_by_one:?}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
