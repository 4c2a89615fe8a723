//! One rotator per rotation: when a rotation by age falls due on a fleet of
//! writing servers refreshing at the same instants, one instance claims it
//! (a compare-and-swap before any KMS call) and rotates; the others make no
//! KMS call until the result is published. A claimant that dies leaves a
//! claim that lapses, and another instance rotates within a bounded delay.

use std::sync::Arc;
use std::time::Duration;

use stateseal::keyset::RotationClaim;
use stateseal::rotation::{CLAIM_TTL, SchedulerConfig, Timing};
use stateseal::{
    KeysetStore, ManualClock, ProviderRegistry, RingHandle, RotationScheduler, UnixTime,
};
use stateseal_contract::integrity::CountingLocal;
use stateseal_testkit::instant;
use stateseal_testkit::keysets;
use tokio::task::JoinSet;

use crate::fleet::{local_keyset, local_registry};

const T0: f64 = 1_782_345_600.0;
const PERIOD: f64 = 1_000.0;
const FLEET: usize = 12;

/// R = 10, S = 5, T = 100 (P = 25): the rendezvous window is 4R = 40 s.
fn timing() -> Timing {
    Timing::new(
        Duration::from_secs(10),
        Duration::from_secs(5),
        Duration::from_secs(100),
    )
}

struct Fleet {
    kms: Arc<CountingLocal>,
    registry: ProviderRegistry,
    store: Arc<dyn KeysetStore>,
    members: Vec<RotationScheduler>,
}

async fn fleet(tag: &str) -> Fleet {
    fleet_with(tag, 0, "pod").await
}

/// The fleet (instances `<name>-0`, `<name>-1`, ...); the first `broken`
/// members' KMS role cannot generate data keys.
async fn fleet_with(tag: &str, failing: usize, name: &str) -> Fleet {
    let kms = Arc::new(CountingLocal::default());
    let mut registry = local_registry();
    registry.register_provider(kms.clone());
    let (_dir, store) = local_keyset(tag, &registry, timing(), T0).await;
    let mut broken = local_registry();
    broken.register_provider(Arc::new(CountingLocal::refusing_generate()));
    let members = (0..FLEET)
        .map(|i| {
            let registry = if i < failing { &broken } else { &registry };
            let config = SchedulerConfig::builder()
                .timing(timing())
                .rotation_period(Some(Duration::from_secs_f64(PERIOD)))
                .renew_keyset(false)
                .instance_id(format!("{name}-{i}"))
                .build()
                .expect("config");
            RotationScheduler::new(
                config,
                store.clone(),
                registry.clone(),
                Arc::new(RingHandle::empty()),
                Arc::new(ManualClock::new(
                    UnixTime::from_secs_f64(T0).expect("a finite time"),
                )),
            )
            .expect("scheduler")
        })
        .collect();
    let f = Fleet {
        kms,
        registry,
        store,
        members,
    };
    f.refresh_all(T0).await;
    f
}

impl Fleet {
    /// Every member refreshes at `now`, all at once.
    async fn refresh_all(&self, now: f64) {
        let mut tasks = JoinSet::new();
        for m in &self.members {
            let m = m.clone();
            tasks.spawn(async move {
                let _ = m.refresh_at(instant(now)).await;
            });
        }
        while tasks.join_next().await.is_some() {}
    }

    async fn generation(&self) -> u64 {
        keysets::stored(self.store.as_ref()).await.generation()
    }

    /// Generations the members hold (all equal once the fleet converged).
    fn held(&self) -> Vec<Option<u64>> {
        self.members.iter().map(|m| m.status().generation).collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_due_rotation_is_claimed_and_made_by_one_instance() {
    let f = fleet("one-rotator").await;
    let (generated, unwrapped) = (f.kms.generates(), f.kms.unwraps());
    assert_eq!(f.generation().await, 1);
    // From the moment the rotation falls due, everyone refreshes every 2 s, together.
    let mut now = T0 + PERIOD;
    while now <= T0 + PERIOD + 60.0 {
        f.refresh_all(now).await;
        now += 2.0;
    }
    assert_eq!(
        f.kms.generates() - generated,
        1,
        "exactly one instance made the rotation's KMS calls"
    );
    // One claim, one rotation: two writes.
    assert_eq!(f.generation().await, 3);
    let doc = keysets::content(f.store.as_ref(), &f.registry).await;
    assert_eq!(doc.keys.len(), 2);
    assert_eq!(doc.rotation_claim, None, "the rotation spent the claim");
    assert!(f.held().iter().all(|g| *g == Some(3)), "{:?}", f.held());
    // Every member unwrapped the new key once; the rotator proved the new
    // key and the live one before writing.
    let unwraps = f.kms.unwraps() - unwrapped;
    assert!(
        unwraps <= FLEET as u64 + 3,
        "{unwraps} unwraps for {FLEET} instances"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_claim_whose_holder_died_lapses_and_another_instance_rotates() {
    let f = fleet("dead-claimant").await;
    let primary = keysets::content(f.store.as_ref(), &f.registry).await.keys[0]
        .entry
        .clone();
    // An instance claimed the rotation just as it fell due, and died.
    let until = T0 + PERIOD + CLAIM_TTL.as_secs_f64();
    keysets::resealed(f.store.as_ref(), &f.registry, |d| {
        d.rotation_claim = Some(RotationClaim {
            holder: "pod-dead".into(),
            primary: primary.clone(),
            until: stateseal_testkit::instant(until),
            tried: Vec::new(),
        });
    })
    .await;
    f.refresh_all(T0 + PERIOD).await;
    let generated = f.kms.generates();
    let mut now = T0 + PERIOD;
    let mut rotated_at = None;
    while now <= until + 4.0 * timing().refresh_interval.as_secs_f64() + 10.0 {
        f.refresh_all(now).await;
        if rotated_at.is_none() && f.generation().await > 2 {
            rotated_at = Some(now);
        }
        now += 2.0;
    }
    let rotated_at = rotated_at.expect("another instance rotated");
    assert!(
        rotated_at >= until,
        "rotated at {rotated_at}, under a live claim"
    );
    assert!(
        rotated_at <= until + 4.0 * timing().refresh_interval.as_secs_f64() + 2.0,
        "the fallback is bounded by the rendezvous window"
    );
    assert_eq!(f.kms.generates() - generated, 1);
    // The survivor's claim, then its rotation.
    assert_eq!(f.generation().await, 4);
}

/// A claimant that lives but cannot rotate (its role lacks the generate
/// permission) claims once, fails, and steps back: its claim lapses and
/// another instance rotates within the claim's end plus the rendezvous
/// window, with one claim write by the broken pod, not one per refresh.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_claimant_whose_rotation_fails_steps_back_and_another_rotates() {
    let f = fleet_with("failing-claimant", 1, "pod").await;
    let window = 4.0 * timing().refresh_interval.as_secs_f64();
    // Pod 0 alone refreshes once every turn has come (the turns span 4R from
    // the due time): it claims and its generate call is refused.
    let first = T0 + PERIOD + window;
    let _ = f.members[0].refresh_at(instant(first)).await;
    let doc = keysets::content(f.store.as_ref(), &f.registry).await;
    let claim = doc.rotation_claim.expect("pod 0 claimed the rotation");
    assert_eq!((claim.holder.as_str(), f.generation().await), ("pod-0", 2));
    let until = claim.until;
    // Everyone refreshes every 2 s from then on.
    let mut now = first + 2.0;
    let mut rotated_at = None;
    while now <= until.as_secs_f64() + window + 20.0 && rotated_at.is_none() {
        f.refresh_all(now).await;
        let doc = keysets::content(f.store.as_ref(), &f.registry).await;
        if doc.keys.len() > 1 {
            rotated_at = Some(now);
        } else if now < until.as_secs_f64() {
            assert_eq!(
                f.generation().await,
                2,
                "at {}s the claim was rewritten under a live claim",
                now - first
            );
        }
        now += 2.0;
    }
    let rotated_at = rotated_at.unwrap_or_else(|| {
        panic!(
            "no rotation within the claim's end + 4R: the failing claimant froze it (generation {})",
            f.members[1].status().generation.unwrap_or(0)
        )
    });
    assert!(
        rotated_at >= until.as_secs_f64(),
        "rotated at {rotated_at} under a live claim"
    );
    assert!(
        rotated_at <= until.as_secs_f64() + window + 2.0,
        "rotated {}s after the claim lapsed",
        rotated_at - until.as_secs_f64()
    );
    // The broken pod's claim, another pod's claim, its rotation.
    assert_eq!(f.generation().await, 4);
    let doc = keysets::content(f.store.as_ref(), &f.registry).await;
    assert_eq!(doc.rotation_claim, None);
}

/// Several claimants that cannot rotate, started first, and one healthy
/// instance that joins only 4R after the rotation fell due (the others of the
/// fleet stay down), so the broken pods' turns come first. Each broken pod claims the rotation once, is listed in the next
/// claim as having tried, and waits until every instance that has not tried
/// had its turn; so the rotation lands within k × (claim lifetime + 4R) of
/// falling due (plus 2R for the first turn and the 2 s refresh step), on
/// every run: instance names vary per run, and so the order of turns.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn several_failing_claimants_delay_a_rotation_by_one_claim_each_at_most() {
    let r = timing().refresh_interval;
    for (failing, runs) in [(2usize, 6u32), (5, 4)] {
        let bound = failing as f64 * (CLAIM_TTL.as_secs_f64() + 4.0 * r.as_secs_f64())
            + 2.0 * r.as_secs_f64()
            + 2.0;
        for run in 0..runs {
            let name = format!("run{run}k{failing}");
            let f = fleet_with(&format!("failing-{name}"), failing, &name).await;
            let due = T0 + PERIOD;
            let mut now = due;
            let mut holders = Vec::new();
            let rotated_at = loop {
                let joined = if now < due + 4.0 * r.as_secs_f64() {
                    failing
                } else {
                    failing + 1
                };
                let mut tasks = JoinSet::new();
                for m in &f.members[..joined] {
                    let m = m.clone();
                    tasks.spawn(async move {
                        let _ = m.refresh_at(instant(now)).await;
                    });
                }
                while tasks.join_next().await.is_some() {}
                let doc = keysets::content(f.store.as_ref(), &f.registry).await;
                if doc.keys.len() > 1 {
                    break now;
                }
                if let Some(c) = doc.rotation_claim {
                    holders = c.tried.clone();
                    holders.push(c.holder);
                }
                assert!(
                    now <= due + bound,
                    "k = {failing}, run {run}: no rotation within {bound} s of due; claimed by {holders:?}"
                );
                now += 2.0;
            };
            let distinct: std::collections::BTreeSet<&String> = holders.iter().collect();
            assert_eq!(
                distinct.len(),
                holders.len(),
                "a pod claimed twice: {holders:?}"
            );
            println!(
                "k = {failing}, run {run}: rotated {:.0} s after due (bound {bound:.0} s); failed claims before it {holders:?}",
                rotated_at - due
            );
        }
    }
}
