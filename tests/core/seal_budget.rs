//! The random-nonce bound of `v1.` keys across a fleet that restarts and
//! grows: instances reserve seals in the keyset before they make them, so the
//! keyset's count for a key is never below the seals actually made under it
//! (by live and by dead processes), and the fleet rotates once that count
//! reaches the limit, although no single process ever comes close to it. The
//! rotation brings a `v2.` key, which needs no reservation at all; a process
//! that cannot reserve (a read-only server) seals nothing with a `v1.` key
//! and does not retry its reservation at every refresh.

use stateseal_testkit::keysets;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use stateseal::provider::WrapContext;
use stateseal::rotation::{SchedulerConfig, Timing};
use stateseal::{
    AesGcmCodec, KeyProvider, KeysetStore, LocalProvider, ManualClock, RingHandle,
    RotationScheduler, StateCodec, UnixTime,
};

use crate::fleet::{local_keyset, local_registry};
use stateseal_testkit::instant;

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
        .timing(Timing::new(
            Duration::from_secs(1),
            Duration::from_secs(1),
            Duration::from_secs(10),
        ))
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
        Arc::new(ManualClock::new(
            UnixTime::from_secs_f64(T0).expect("a finite time"),
        )),
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
    stateseal::KeyId::of_format(&secret, e.alg).to_hex()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seal_budget_survives_restarts_and_fleet_growth() {
    let registry = local_registry();
    let (dir, store) = local_keyset("seal-budget", &registry, config().timing, T0).await;
    // A keyset whose key was written before v2 tokens.
    keysets::with_v1_keys(&*store, &registry).await;
    let mut rng = Rng(0x5eed_5eed);
    let mut fleet: Vec<Process> = (0..3).map(|_| start(&store)).collect();
    // Seals made under each key (by kid), by every process that ever lived.
    let mut made: HashMap<String, u64> = HashMap::new();
    // The most any one process sealed under each key.
    let mut most_by_one: HashMap<String, u64> = HashMap::new();
    let mut kids: HashMap<String, String> = HashMap::new();
    let mut v1_kids: HashSet<String> = HashSet::new();
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
            p.sched.refresh_at(instant(now)).await.expect("refresh");
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
        // The keyset never counts fewer seals than were made under a v1 key.
        let doc = keysets::content(&*store, &registry).await;
        for e in &doc.keys {
            if !kids.contains_key(&e.entry) {
                kids.insert(e.entry.clone(), kid_of(&store, &e.entry).await);
            }
            let made_here = made.get(&kids[&e.entry]).copied().unwrap_or(0);
            if e.alg != stateseal::TokenFormat::V1 {
                continue; // no budget
            }
            v1_kids.insert(kids[&e.entry].clone());
            assert!(
                made_here <= e.seals_reserved,
                "tick {tick}: entry {} made {made_here} seals, reserved {}",
                e.entry,
                e.seals_reserved
            );
        }
    }
    // One rotation by count, to a v2 key that seals with nothing reserved.
    let primaries: HashSet<&String> = made.keys().collect();
    assert_eq!(primaries.len(), 2, "rotated by count once: {made:?}");
    let doc = keysets::content(&*store, &registry).await;
    let newest = doc.keys.last().expect("entry");
    assert_eq!(newest.alg, stateseal::TokenFormat::V2);
    assert_eq!(newest.seals_reserved, 0);
    assert!(made[&kids[&newest.entry]] > 0, "the v2 key sealed");
    assert!(restarts > 50, "{restarts}");
    // No key sealed far past the limit: rotation starts at the limit, and the old
    // key seals on for at most the propagation window (P = 3 s) and a refresh.
    let window = 5 * 8 * MAX_RATE;
    assert_eq!(v1_kids.len(), 1);
    for kid in &v1_kids {
        let n = made[kid];
        assert!(n <= LIMIT + window, "{kid}: {n} seals");
    }
    // What per-process counting would have missed: the v1 key reached its
    // fleet-wide budget and rotated while no single process came near it.
    for kid in &v1_kids {
        assert!(
            most_by_one[kid] < LIMIT / 2,
            "made {made:?}, most by one process {most_by_one:?}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A store that reads but refuses every write (a read-only server's
/// credentials), counting the writes it was asked for.
#[derive(Debug)]
struct ReadOnly(Arc<dyn KeysetStore>, Arc<std::sync::atomic::AtomicU64>);

impl KeysetStore for ReadOnly {
    fn uri(&self) -> &str {
        self.0.uri()
    }
    fn load(
        &self,
    ) -> stateseal::provider::BoxFuture<'_, Result<Option<stateseal::StoredKeyset>, stateseal::Error>>
    {
        self.0.load()
    }
    fn compare_and_swap<'a>(
        &'a self,
        _: Option<u64>,
        _: &'a stateseal::StoredKeyset,
    ) -> stateseal::provider::BoxFuture<'a, Result<(), stateseal::Error>> {
        self.1.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Box::pin(async {
            Err(stateseal::Error::Provider(
                stateseal::ProviderError::Store {
                    uri: "read-only".into(),
                    problem: "403 Forbidden".into(),
                },
            ))
        })
    }
}

/// A process that cannot write the keyset seals nothing with a v1 key (the
/// keyset's count must never be below the seals made), says why and that a
/// v2 key needs no reservation, and backs off its reservation writes instead
/// of trying at every refresh; a v2 key it seals without limit.
#[tokio::test]
async fn a_process_that_cannot_reserve_seals_nothing_unrecorded_with_a_v1_key() {
    let registry = local_registry();
    let (dir, store) = local_keyset("seal-budget-ro", &registry, config().timing, T0).await;
    let writes = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let start = |store: Arc<dyn KeysetStore>| {
        let ring = Arc::new(RingHandle::empty());
        let sched = RotationScheduler::new(
            config()
                .to_builder()
                .seal_reservation_block(Some(3))
                .renew_keyset(false)
                .build()
                .expect("config"),
            Arc::new(ReadOnly(store, writes.clone())),
            local_registry(),
            ring.clone(),
            Arc::new(ManualClock::new(
                UnixTime::from_secs_f64(T0).expect("a finite time"),
            )),
        )
        .expect("scheduler");
        (sched, AesGcmCodec::new(ring))
    };
    // A v2 key: no budget, no write needed.
    let (sched, codec) = start(store.clone());
    sched.refresh_at(instant(T0)).await.expect("refresh");
    for _ in 0..10 {
        codec
            .seal(b"x")
            .expect("a v2 key seals without a reservation");
    }
    assert_eq!(writes.load(std::sync::atomic::Ordering::SeqCst), 0);
    // A v1 key: nothing recorded, nothing sealed.
    keysets::with_v1_keys(&*store, &registry).await;
    let (sched, codec) = start(store.clone());
    sched.refresh_at(instant(T0 + 1.0)).await.expect("refresh");
    let err = codec.seal(b"x").expect_err("no recorded reservation");
    assert!(
        matches!(
            err,
            stateseal::Error::Data(stateseal::DataError::SealBudgetExhausted { limit: 0, .. })
        ),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("recorded seal reservation") && text.contains("`stateseal rotate`"),
        "{text}"
    );
    assert!(!sched.is_ready(), "a process that cannot seal says so");
    // R = 1 s: ten more refreshes, one a second. The refused write is tried
    // again after R, 2R, 4R (backing off), not at each refresh.
    for i in 2..=11 {
        sched
            .refresh_at(instant(T0 + f64::from(i)))
            .await
            .expect("refresh");
        assert!(codec.seal(b"x").is_err(), "sealed unrecorded at +{i}s");
    }
    let attempts = writes.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(attempts, 4, "reservation writes in 11 refreshes");
    assert!(!sched.is_ready());
    let _ = std::fs::remove_dir_all(dir);
}
