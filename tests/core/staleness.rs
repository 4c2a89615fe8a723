//! Bounded staleness: an instance cut off from the keyset store stops sealing
//! before the fleet can retire its primary (2P after its last read, by
//! default), so every state it sealed verifies on the rest of the fleet
//! until it expires, and it goes on verifying states itself.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use stateseal::provider::BoxFuture;
use stateseal::rotation::{RotateMode, SchedulerConfig, Timing, rotate_store_at};
use stateseal::{
    DataError, Envelope, Error, KeysetStore, ManualClock, MintOptions, OpenOptions, ProviderError,
    RequestIdentity, RingHandle, RotationScheduler, StoredKeyset, UnixTime,
};

use crate::fleet::{local_keyset, local_registry};
use stateseal_testkit::instant;

const T0: f64 = 1_782_345_600.0;

/// R = 10, S = 5, T = 100: P = 2R + S = 25, so the default bound is 50 s.
fn timing() -> Timing {
    Timing::new(
        Duration::from_secs(10),
        Duration::from_secs(5),
        Duration::from_secs(100),
    )
}

fn config() -> SchedulerConfig {
    SchedulerConfig::builder()
        .timing(timing())
        .rotation_period(None)
        .renew_keyset(false)
        .build()
        .expect("config")
}

/// A store handle that can be cut off (a network partition of one instance).
#[derive(Debug)]
struct Partitionable {
    inner: Arc<dyn KeysetStore>,
    cut: AtomicBool,
}

impl Partitionable {
    fn check(&self) -> Result<(), Error> {
        if self.cut.load(Ordering::SeqCst) {
            return Err(Error::Provider(ProviderError::Store {
                uri: self.inner.uri().to_owned(),
                problem: "partitioned".into(),
            }));
        }
        Ok(())
    }
}

impl KeysetStore for Partitionable {
    fn uri(&self) -> &str {
        self.inner.uri()
    }
    fn load(&self) -> BoxFuture<'_, Result<Option<StoredKeyset>, Error>> {
        Box::pin(async move {
            self.check()?;
            self.inner.load().await
        })
    }
    fn compare_and_swap<'a>(
        &'a self,
        expected: Option<u64>,
        doc: &'a StoredKeyset,
    ) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            self.check()?;
            self.inner.compare_and_swap(expected, doc).await
        })
    }
}

struct Member {
    sched: RotationScheduler,
    env: Envelope,
    ring: Arc<RingHandle>,
}

fn member(store: Arc<dyn KeysetStore>) -> Member {
    let ring = Arc::new(RingHandle::empty());
    let sched = RotationScheduler::new(
        config(),
        store,
        local_registry(),
        ring.clone(),
        Arc::new(ManualClock::new(
            UnixTime::from_secs_f64(T0).expect("a finite time"),
        )),
    )
    .expect("scheduler");
    let env = Envelope::builder(ring.clone(), Some("svc"))
        .ttl(timing().ttl)
        .max_skew(timing().max_skew)
        .build()
        .expect("envelope");
    Member { sched, env, ring }
}

fn round() -> RequestIdentity {
    RequestIdentity::from_json("tools/call", br#"{"name":"t","arguments":{}}"#).expect("id")
}

#[test]
fn the_default_bound_is_twice_the_propagation_window() {
    assert_eq!(
        config().store_staleness_limit(&timing()),
        Duration::from_secs(50)
    );
    let slow = timing().with_propagation(Duration::from_secs(300));
    assert_eq!(
        config().store_staleness_limit(&slow),
        Duration::from_secs(600)
    );
}

/// The fleet rotates right after the cut-off instance's last read; that
/// instance seals under its old primary for 2P, and every one of those states
/// verifies on the fleet until it expires. Then it seals nothing, but still
/// verifies; once the store is back it seals with the fleet's key.
#[tokio::test]
async fn a_cut_off_instance_stops_sealing_before_the_fleet_retires_its_key() {
    let registry = local_registry();
    let (_dir, store) = local_keyset("staleness", &registry, timing(), T0).await;
    let cut = Arc::new(Partitionable {
        inner: store.clone(),
        cut: AtomicBool::new(false),
    });
    let a = member(cut.clone());
    let b = member(store.clone());
    a.sched.refresh_at(instant(T0)).await.expect("a");
    b.sched.refresh_at(instant(T0)).await.expect("b");
    let old = a.ring.current().expect("ring").primary().kid();
    cut.cut.store(true, Ordering::SeqCst);
    let doc = rotate_store_at(
        store.as_ref(),
        &registry,
        &config(),
        instant(T0 + 0.001),
        RotateMode::Scheduled,
    )
    .await
    .expect("rotate");
    let retire = doc.keys[0].retire_at.expect("the old key retires");

    // A refreshes every R (failing) and seals all along; B follows the fleet.
    let mut last_sealed = None;
    let mut t = T0;
    while t <= T0 + 80.0 {
        let _ = a.sched.refresh_at(instant(t)).await;
        b.sched.refresh_at(instant(t)).await.expect("b");
        match a.env.mint(
            &round(),
            b"state",
            MintOptions::new().at(UnixTime::from_secs_f64(t).expect("a finite time")),
        ) {
            Ok(token) => {
                assert!(t - T0 <= 50.0, "sealed {}s after its last read", t - T0);
                assert_eq!(a.ring.current().expect("ring").primary().kid(), old);
                last_sealed = Some((t, token));
            }
            Err(e) => {
                assert!(t - T0 > 50.0, "stopped too early, at +{}s", t - T0);
                assert_eq!(e, Error::Data(DataError::SealingStopped));
                assert!(!a.sched.is_ready());
            }
        }
        t += 10.0;
    }
    let (sealed_at, token) = last_sealed.expect("sealed within the bound");
    assert_eq!(sealed_at, T0 + 50.0);
    // Its last state lives until sealed_at + T; B, even S behind, verifies it to the end...
    let end = sealed_at + timing().ttl.as_secs_f64() + timing().max_skew.as_secs_f64() - 0.5;
    assert!(
        end < retire.as_secs_f64(),
        "the old key retires after the last state expires"
    );
    b.sched.refresh_at(instant(end)).await.expect("b");
    assert!(
        b.env
            .open(
                &round(),
                &token,
                OpenOptions::new().at(UnixTime::from_secs_f64(
                    sealed_at + timing().ttl.as_secs_f64() - 0.5
                )
                .expect("a finite time"))
            )
            .map(|o| o.state)
            .is_ok()
    );
    // ...and so does A, sealing nothing.
    assert!(
        a.env
            .open(
                &round(),
                &token,
                OpenOptions::new()
                    .at(UnixTime::from_secs_f64(sealed_at + 10.0).expect("a finite time"))
            )
            .map(|o| o.state)
            .is_ok()
    );
    // The store is back: A adopts the fleet's keyset and seals with its primary.
    cut.cut.store(false, Ordering::SeqCst);
    a.sched
        .refresh_at(instant(T0 + 90.0))
        .await
        .expect("a recovers");
    assert!(a.sched.is_ready());
    let fleet_primary = b.ring.current().expect("ring").primary().kid();
    assert_eq!(
        a.ring.current().expect("ring").primary().kid(),
        fleet_primary
    );
    assert_ne!(fleet_primary, old);
    a.env
        .mint(
            &round(),
            b"state",
            MintOptions::new().at(UnixTime::from_secs_f64(T0 + 90.0).expect("a finite time")),
        )
        .expect("seals again");
}
