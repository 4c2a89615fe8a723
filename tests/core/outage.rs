//! KMS outages and revocation: cached keys keep serving through a transient
//! outage (within `outage_grace`), a denied key is dropped once its cached
//! unwrap expires, and a restart during an outage stays not-ready.

use stateseal_testkit::instant;
use stateseal_testkit::keysets;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use stateseal::provider::{BoxFuture, DataKey, ErrorClass, KeyProvider, WrapContext, kms_error};
use stateseal::rotation::{SchedulerConfig, Timing};
use stateseal::{
    DataError, Envelope, Error, KeysetStore, LocalProvider, ManualClock, MintOptions, OpenOptions,
    ProviderRegistry, RequestIdentity, RingHandle, RotationScheduler, Secret,
};

use crate::fleet::local_keyset;

/// The local provider behind a switch: 0 = healthy, 1 = transient outage, 2 = access denied.
#[derive(Debug, Default)]
struct Switchable {
    mode: AtomicU8,
}

impl KeyProvider for Switchable {
    fn scheme(&self) -> &'static str {
        "local"
    }
    fn generate<'a>(
        &'a self,
        kek: &'a str,
        ctx: WrapContext<'a>,
    ) -> BoxFuture<'a, Result<DataKey, Error>> {
        Box::pin(async move { LocalProvider::new().generate(kek, ctx).await })
    }
    fn unwrap<'a>(
        &'a self,
        kek: &'a str,
        wrapped: &'a [u8],
        ctx: WrapContext<'a>,
    ) -> BoxFuture<'a, Result<Secret, Error>> {
        Box::pin(async move {
            match self.mode.load(Ordering::SeqCst) {
                1 => Err(kms_error(
                    "local",
                    ErrorClass::Transient,
                    "connection refused",
                )),
                2 => Err(kms_error("local", ErrorClass::Denied, "access denied")),
                _ => LocalProvider::new().unwrap(kek, wrapped, ctx).await,
            }
        })
    }
}

struct Setup {
    provider: Arc<Switchable>,
    store: Arc<dyn KeysetStore>,
    registry: ProviderRegistry,
    config: SchedulerConfig,
    t0: f64,
    _dir: std::path::PathBuf,
}

async fn setup() -> Setup {
    let provider = Arc::new(Switchable::default());
    let mut registry = ProviderRegistry::with_defaults();
    registry.register_provider(provider.clone());
    let t0 = 1_782_345_600.0;
    let (dir, store) = local_keyset("outage", &registry, Timing::default(), t0).await;
    // Seal reservations off: these tests count the keyset's writes (tests/core/seal_budget.rs has them on).
    let config = SchedulerConfig::builder()
        .seal_reservation_block(None)
        .max_key_age(Duration::from_secs(3600))
        .outage_grace(Duration::from_secs(86_400))
        .rotation_period(None)
        .build()
        .expect("config");
    Setup {
        provider,
        store,
        registry,
        config,
        t0,
        _dir: dir,
    }
}

fn instance(s: &Setup) -> (RotationScheduler, Envelope) {
    let ring = Arc::new(RingHandle::empty());
    let sched = RotationScheduler::new(
        s.config.clone(),
        s.store.clone(),
        s.registry.clone(),
        ring.clone(),
        Arc::new(ManualClock::new(instant(s.t0))),
    )
    .expect("scheduler");
    let env = Envelope::builder(ring, Some("svc")).build().expect("env");
    (sched, env)
}

fn round() -> RequestIdentity {
    RequestIdentity::from_json("tools/call", br#"{"name":"t","arguments":{}}"#).expect("id")
}

fn works(env: &Envelope, now: f64) -> bool {
    env.mint(&round(), b"s", MintOptions::new().at(instant(now)))
        .and_then(|t| {
            env.open(&round(), &t, OpenOptions::new().at(instant(now)))
                .map(|o| o.state)
        })
        .is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transient_outage_within_grace_causes_no_rejection() {
    let s = setup().await;
    let (sched, env) = instance(&s);
    sched.refresh_at(instant(s.t0)).await.expect("refresh");
    let token = env
        .mint(&round(), b"before", MintOptions::new().at(instant(s.t0)))
        .expect("mint");
    s.provider.mode.store(1, Ordering::SeqCst);
    let calls = sched.kms_calls();
    // Past max_key_age the key is re-unwrapped; the KMS is down; the cached key keeps serving.
    for dt in [3_601.0, 7_200.0, 50_000.0, 3_600.0 + 86_399.0] {
        sched
            .refresh_at(instant(s.t0 + dt))
            .await
            .expect("refresh during outage");
        assert!(sched.is_ready());
        assert!(
            works(&env, s.t0 + dt),
            "rejected at +{dt}s during a transient outage"
        );
    }
    assert!(
        sched.kms_calls() > calls,
        "the scheduler kept trying the KMS"
    );
    assert!(
        env.open(&round(), &token, OpenOptions::new().at(instant(s.t0 + 1.0)))
            .map(|o| o.state)
            .is_ok()
    );
    // Past max_key_age + outage_grace the key is dropped: fail closed.
    let late = s.t0 + 3_600.0 + 86_400.0 + 1.0;
    assert!(matches!(
        sched.refresh_at(instant(late)).await.unwrap_err(),
        Error::Data(DataError::KeysUnavailable(_))
    ));
    assert!(!sched.is_ready());
    assert_eq!(
        env.mint(&round(), b"x", MintOptions::new().at(instant(late)))
            .unwrap_err(),
        Error::Data(DataError::NotReady)
    );
    // The KMS comes back: the next refresh recovers.
    s.provider.mode.store(0, Ordering::SeqCst);
    sched
        .refresh_at(instant(late + 30.0))
        .await
        .expect("recovered");
    assert!(works(&env, late + 30.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn denied_key_is_dropped_after_max_key_age() {
    let s = setup().await;
    let (sched, env) = instance(&s);
    sched.refresh_at(instant(s.t0)).await.expect("refresh");
    s.provider.mode.store(2, Ordering::SeqCst);
    // Within max_key_age the cached unwrap is still valid: no KMS call, still serving.
    sched
        .refresh_at(instant(s.t0 + 3_599.0))
        .await
        .expect("refresh");
    assert!(works(&env, s.t0 + 3_599.0));
    // Once it expires, the KMS's "denied" drops the key.
    assert!(matches!(
        sched.refresh_at(instant(s.t0 + 3_601.0)).await.unwrap_err(),
        Error::Data(DataError::KeysUnavailable(_))
    ));
    assert!(!works(&env, s.t0 + 3_601.0));
    // The status names the real cause: which entry, and the KMS's answer.
    let last = sched.status().last_error.expect("error");
    assert!(
        last.starts_with("no key in the keyset can seal: entry k_")
            && last.ends_with("local KMS: denied: access denied"),
        "{last}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_during_outage_stays_not_ready_and_never_seals() {
    let s = setup().await;
    s.provider.mode.store(1, Ordering::SeqCst);
    let (sched, env) = instance(&s);
    assert!(sched.refresh_at(instant(s.t0)).await.is_err());
    assert!(!sched.is_ready());
    assert_eq!(
        env.mint(&round(), b"x", MintOptions::new().at(instant(s.t0)))
            .unwrap_err(),
        Error::Data(DataError::NotReady)
    );
    s.provider.mode.store(0, Ordering::SeqCst);
    sched
        .refresh_at(instant(s.t0 + 1.0))
        .await
        .expect("recovers");
    assert!(works(&env, s.t0 + 1.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steady_state_traffic_makes_no_kms_calls() {
    let s = setup().await;
    let (sched, env) = instance(&s);
    sched.refresh_at(instant(s.t0)).await.expect("refresh");
    let after_load = sched.kms_calls();
    // One for the document's MAC key, one for its data key.
    assert_eq!(after_load, 2);
    for i in 0..20_000u32 {
        let now = s.t0 + f64::from(i) * 0.1;
        if i.is_multiple_of(300) {
            sched.refresh_at(instant(now)).await.expect("refresh");
        }
        assert!(works(&env, now));
    }
    assert_eq!(
        sched.kms_calls(),
        after_load,
        "no KMS call within max_key_age, whatever the traffic"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotates_automatically_by_age_and_by_seal_count_exactly_once() {
    let mut s = setup().await;
    // By age: two instances refresh past rotation_period; exactly one CAS write wins.
    s.config = s
        .config
        .to_builder()
        .rotation_period(Some(Duration::from_secs(1_000)))
        .build()
        .expect("config");
    let (a, _) = instance(&s);
    let (b, _) = instance(&s);
    a.refresh_at(instant(s.t0)).await.expect("refresh");
    b.refresh_at(instant(s.t0)).await.expect("refresh");
    assert_eq!(keysets::content(&*s.store, &s.registry).await.generation, 1);
    // Each takes its turn within the rendezvous window (4R) after the rotation fell due.
    let mut t = s.t0 + 1_000.0;
    while t <= s.t0 + 1_000.0 + 5.0 * s.config.timing.refresh_interval.as_secs_f64() {
        a.refresh_at(instant(t)).await.expect("refresh");
        b.refresh_at(instant(t + 0.5)).await.expect("refresh");
        t += 10.0;
    }
    let doc = keysets::content(&*s.store, &s.registry).await;
    assert_eq!(
        (doc.generation, doc.keys.len()),
        (3, 2),
        "one claim and one rotation, not two"
    );
    // By seal count: an instance that sealed max_seals_per_key states rotates.
    let s2 = {
        let mut s2 = setup().await;
        s2.config = s2
            .config
            .to_builder()
            .max_seals_per_key(5)
            .build()
            .expect("config");
        s2
    };
    // (Only v1 keys count seals: a keyset whose key predates v2 tokens.)
    keysets::with_v1_keys(&*s2.store, &s2.registry).await;
    let (c, env) = instance(&s2);
    c.refresh_at(instant(s2.t0)).await.expect("refresh");
    for _ in 0..5 {
        env.mint(&round(), b"s", MintOptions::new().at(instant(s2.t0)))
            .expect("mint");
    }
    c.refresh_at(instant(s2.t0 + 30.0)).await.expect("refresh");
    let doc = keysets::content(&*s2.store, &s2.registry).await;
    // The v1 rewrite, the claim, the rotation.
    assert_eq!(doc.generation, 4);
    // The new key is a v2 key: it never rotates by count.
    assert_eq!(
        doc.keys.last().map(|e| e.alg),
        Some(stateseal::TokenFormat::V2)
    );
}
