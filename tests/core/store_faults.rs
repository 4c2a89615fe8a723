//! The key plane when the keyset store misbehaves: an unreadable or garbage
//! document never freezes the ring, an older or foreign document is never
//! adopted, a store that stays unusable past `max_store_staleness` stops
//! sealing (and keeps verifying), and a rotation retries only after a seal
//! reservation. Entries rewritten under a running ring: `entry_rewrites`.

use std::sync::Arc;
use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use stateseal::provider::BoxFuture;
use stateseal::rotation::{RotateMode, SchedulerConfig, Timing, rotate_store_at, rotated};
use stateseal::{
    Error, KeysetError, KeysetRefusal, KeysetStore, ManualClock, ProviderRegistry, RingHandle,
    RotationScheduler, StoredKeyset, UnixTime,
};
use stateseal_testkit::instant;
use stateseal_testkit::keysets;

use crate::fleet::{local_keyset, local_registry};
use crate::recorded::{block_on_recorded, values};

pub(crate) const T0: f64 = 1_782_345_600.0;

/// Seal reservations off: these tests count the keyset's generations. The
/// staleness bound is set well above its default (2P = 50 s, see
/// `staleness.rs`) so the timeline can be followed without a store.
pub(crate) fn config() -> SchedulerConfig {
    SchedulerConfig::builder()
        .seal_reservation_block(None)
        .timing(Timing::new(
            Duration::from_secs(10),
            Duration::from_secs(5),
            Duration::from_secs(100),
        ))
        .max_key_age(Duration::from_secs(3600))
        .outage_grace(Duration::from_secs(7200))
        .max_store_staleness(Some(Duration::from_secs(7200)))
        .rotation_period(None)
        .build()
        .expect("config")
}

/// A scheduler and the ring it loads, at `T0`.
pub(crate) struct Instance {
    pub(crate) sched: RotationScheduler,
    pub(crate) ring: Arc<RingHandle>,
}

pub(crate) fn instance(store: Arc<dyn KeysetStore>, registry: &ProviderRegistry) -> Instance {
    let ring = Arc::new(RingHandle::empty());
    let sched = RotationScheduler::new(
        config(),
        store,
        registry.clone(),
        ring.clone(),
        Arc::new(ManualClock::new(
            UnixTime::from_secs_f64(T0).expect("a finite time"),
        )),
    )
    .expect("scheduler");
    Instance { sched, ring }
}

impl Instance {
    pub(crate) fn primary(&self) -> Option<String> {
        self.ring.current().map(|r| r.kids()[0].to_hex())
    }
    pub(crate) fn kids(&self) -> Vec<String> {
        self.ring
            .current()
            .map(|r| r.kids().iter().map(|k| k.to_hex()).collect())
            .unwrap_or_default()
    }
}

pub(crate) fn path_of(store: &Arc<dyn KeysetStore>) -> std::path::PathBuf {
    std::path::PathBuf::from(store.uri().trim_start_matches("file://"))
}

#[tokio::test]
async fn garbage_in_the_store_does_not_freeze_the_timeline() {
    let registry = local_registry();
    let (dir, store) = local_keyset("faults-garbage", &registry, config().timing, T0).await;
    let a = instance(store.clone(), &registry);
    a.sched.refresh_at(instant(T0)).await.expect("refresh");
    let old = a.primary().expect("ring");
    let doc = rotate_store_at(
        store.as_ref(),
        &registry,
        &config(),
        instant(T0 + 1.0),
        RotateMode::Scheduled,
    )
    .await
    .expect("rotate");
    a.sched
        .refresh_at(instant(T0 + 2.0))
        .await
        .expect("refresh");
    assert_eq!(a.primary().as_ref(), Some(&old), "phase 1: old key seals");
    let new_entry = doc.keys.last().expect("new").clone();
    let retire = doc.keys[0].retire_at.expect("old key retires");

    std::fs::write(path_of(&store), b"{ not a keyset").expect("garbage");
    // Past the new key's activation the new key seals, although the store is garbage.
    let err = a
        .sched
        .refresh_at(new_entry.activate_at + Duration::from_secs(1))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            Error::Keyset(KeysetError::Refused {
                reason: KeysetRefusal::Invalid,
                ..
            })
        ),
        "{err}"
    );
    assert_ne!(a.primary().as_ref(), Some(&old), "phase 2 reached");
    assert_eq!(a.kids().len(), 2);
    assert!(a.sched.is_ready());
    let status = a.sched.status();
    assert_eq!(status.generation, Some(2));
    assert!(status.last_error.expect("error").contains("invalid"));
    // Past the old key's retirement it is gone, still without a readable store.
    let _ = a.sched.refresh_at(retire + Duration::from_secs(1)).await;
    assert_eq!(a.kids().len(), 1);
    assert!(a.sched.is_ready());
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_store_unusable_past_max_store_staleness_stops_sealing_and_recovers() {
    let registry = local_registry();
    let (dir, store) = local_keyset("faults-stale", &registry, config().timing, T0).await;
    let good = std::fs::read(path_of(&store)).expect("doc");
    let a = instance(store.clone(), &registry);
    a.sched.refresh_at(instant(T0)).await.expect("refresh");
    std::fs::remove_file(path_of(&store)).expect("remove");
    // Within the limit (7200 s) the instance serves on the last good document.
    assert!(a.sched.refresh_at(instant(T0 + 7000.0)).await.is_err());
    assert!(a.sched.is_ready());
    assert!(a.ring.current().is_some_and(|r| r.seals()));
    let err = a.sched.refresh_at(instant(T0 + 7201.0)).await.unwrap_err();
    assert!(err.to_string().contains("max_store_staleness"), "{err}");
    assert!(!a.sched.is_ready());
    let ring = a.ring.current().expect("still verifying");
    assert!(!ring.seals(), "seals nothing past the bound");
    std::fs::write(path_of(&store), good).expect("restore");
    a.sched
        .refresh_at(instant(T0 + 7300.0))
        .await
        .expect("recovers");
    assert!(a.sched.is_ready());
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn max_store_staleness_overrides_outage_grace() {
    let registry = local_registry();
    let (dir, store) = local_keyset("faults-stale-cfg", &registry, config().timing, T0).await;
    let ring = Arc::new(RingHandle::empty());
    let sched = RotationScheduler::new(
        config()
            .to_builder()
            .max_store_staleness(Some(Duration::from_secs(60)))
            .build()
            .expect("config"),
        store.clone(),
        registry,
        ring.clone(),
        Arc::new(ManualClock::new(
            UnixTime::from_secs_f64(T0).expect("a finite time"),
        )),
    )
    .expect("scheduler");
    sched.refresh_at(instant(T0)).await.expect("refresh");
    std::fs::write(path_of(&store), b"[]").expect("garbage");
    assert!(sched.refresh_at(instant(T0 + 59.0)).await.is_err());
    assert!(sched.is_ready());
    assert!(sched.refresh_at(instant(T0 + 61.0)).await.is_err());
    assert!(!sched.is_ready());
    assert!(
        SchedulerConfig::builder()
            .max_store_staleness(Some(Duration::ZERO))
            .build()
            .unwrap_err()
            .to_string()
            .contains("max_store_staleness")
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn an_older_generation_or_another_keyset_is_refused() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _guard = metrics::set_default_local_recorder(&recorder);
    let registry = local_registry();
    let (dir, store) = local_keyset("faults-rollback", &registry, config().timing, T0).await;
    let path = path_of(&store);
    let generation_one = std::fs::read(&path).expect("doc");
    let a = instance(store.clone(), &registry);
    a.sched.refresh_at(instant(T0)).await.expect("refresh");
    let old = a.primary().expect("ring");
    // An emergency rotation: the new key seals at once, the old one is gone after one TTL.
    rotate_store_at(
        store.as_ref(),
        &registry,
        &config(),
        instant(T0 + 1.0),
        RotateMode::Compromise,
    )
    .await
    .expect("rotate");
    a.sched
        .refresh_at(instant(T0 + 2.0))
        .await
        .expect("refresh");
    let new = a.primary().expect("ring");
    assert_ne!(new, old);

    // A restored backup puts generation 1 back.
    std::fs::write(&path, &generation_one).expect("rollback");
    let err = a.sched.refresh_at(instant(T0 + 3.0)).await.unwrap_err();
    assert!(
        matches!(
            &err,
            Error::Keyset(KeysetError::Refused {
                reason: KeysetRefusal::Rollback,
                ..
            })
        ),
        "{err}"
    );
    assert_eq!(a.primary(), Some(new.clone()), "the ring did not go back");
    assert_eq!(a.sched.status().generation, Some(2));
    // Nor does a rotation build on the rolled-back document.
    let err = a
        .sched
        .rotate_at(instant(T0 + 4.0), RotateMode::Forced)
        .await;
    assert!(
        matches!(err, Err(Error::Keyset(KeysetError::Refused { .. }))),
        "{err:?}"
    );
    assert_eq!(
        std::fs::read(&path).expect("doc"),
        generation_one,
        "nothing written"
    );

    // Another keyset altogether, at a higher generation.
    let (other_dir, other) = local_keyset("faults-other", &registry, config().timing, T0).await;
    let theirs = keysets::verified(&*other, &registry).await;
    let mut foreign = theirs.doc.clone();
    foreign.generation = 9;
    let foreign = theirs
        .seal_next(&foreign, keysets::FAR_FUTURE)
        .expect("seal");
    std::fs::write(&path, foreign.bytes()).expect("foreign");
    let err = a.sched.refresh_at(instant(T0 + 5.0)).await.unwrap_err();
    assert!(
        matches!(
            &err,
            Error::Keyset(KeysetError::Refused {
                reason: KeysetRefusal::OtherKeyset,
                ..
            })
        ),
        "{err}"
    );
    assert_eq!(a.primary(), Some(new));

    let counts: Vec<(String, u64)> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(k, ..)| k.key().name() == "stateseal_keyset_rejected_total")
        .filter_map(|(k, _, _, v)| match v {
            DebugValue::Counter(n) => Some((
                k.key()
                    .labels()
                    .find(|l| l.key() == "reason")
                    .map(|l| l.value().to_owned())
                    .unwrap_or_default(),
                n,
            )),
            _ => None,
        })
        .collect();
    assert!(counts.contains(&("rollback".into(), 2)), "{counts:?}");
    assert!(counts.contains(&("other_keyset".into(), 1)), "{counts:?}");
    let _ = std::fs::remove_dir_all(dir);
    let _ = std::fs::remove_dir_all(other_dir);
}

/// A store that lets another writer in just before the first write it forwards.
#[derive(Debug)]
struct Interfering {
    inner: Arc<dyn KeysetStore>,
    other: std::sync::Mutex<Option<StoredKeyset>>,
}

impl KeysetStore for Interfering {
    fn uri(&self) -> &str {
        self.inner.uri()
    }
    fn load(&self) -> BoxFuture<'_, Result<Option<StoredKeyset>, Error>> {
        self.inner.load()
    }
    fn compare_and_swap<'a>(
        &'a self,
        expected: Option<u64>,
        doc: &'a StoredKeyset,
    ) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            let other = self.other.lock().expect("lock").take();
            if let Some(other) = other {
                self.inner
                    .compare_and_swap(Some(other.generation() - 1), &other)
                    .await
                    .expect("the other writer");
            }
            self.inner.compare_and_swap(expected, doc).await
        })
    }
}

#[test]
fn a_rotation_retries_after_a_seal_reservation_but_not_after_a_rotation() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    // Compare-and-swaps lost since the last look (a snapshot drains the recorder).
    let lost = || {
        values(&snapshotter)
            .get("stateseal_keyset_write_conflicts_total")
            .copied()
            .unwrap_or(0.0)
    };
    block_on_recorded(&recorder, || async {
        let registry = local_registry();
        let (dir, store) = local_keyset("faults-retry", &registry, config().timing, T0).await;
        let base = keysets::verified(&*store, &registry).await;
        // A server reserves seals while the operator's rotation is in flight.
        let mut reservation = base.doc.clone();
        reservation.generation += 1;
        reservation.keys[0].seals_reserved = 1 << 20;
        let reservation = base
            .seal_next(&reservation, keysets::FAR_FUTURE)
            .expect("seal");
        let racing = Interfering {
            inner: store.clone(),
            other: std::sync::Mutex::new(Some(reservation)),
        };
        let doc = rotate_store_at(
            &racing,
            &registry,
            &config(),
            instant(T0 + 1.0),
            RotateMode::Scheduled,
        )
        .await
        .expect("retried on the new document");
        assert_eq!(lost(), 1.0, "the lost compare-and-swap is counted");
        assert_eq!(doc.generation, 3);
        assert_eq!(doc.keys.len(), 2);
        assert_eq!(
            doc.keys[0].seals_reserved,
            1 << 20,
            "the reservation is kept"
        );
        // Another operator's rotation gets in first: that conflict is the answer.
        let verified = keysets::verified(&*store, &registry).await;
        let current = verified.doc.clone();
        let mut theirs_entry = current.keys[0].clone();
        theirs_entry.entry = "k_theirs".into();
        let theirs = rotated(
            &current,
            theirs_entry,
            T0 + 2.0,
            &config().timing,
            RotateMode::Forced,
        )
        .expect("their rotation");
        let racing = Interfering {
            inner: store.clone(),
            other: std::sync::Mutex::new(Some(
                verified
                    .seal_next(&theirs, keysets::FAR_FUTURE)
                    .expect("seal"),
            )),
        };
        let err = rotate_store_at(
            &racing,
            &registry,
            &config(),
            instant(T0 + 2.0),
            RotateMode::Forced,
        )
        .await;
        assert!(
            matches!(err, Err(Error::Keyset(KeysetError::Conflict { .. }))),
            "{err:?}"
        );
        assert_eq!(lost(), 1.0, "so is the one that ends the rotation");
        assert_eq!(
            keysets::content(&*store, &registry).await,
            theirs,
            "only their rotation landed"
        );
        let _ = std::fs::remove_dir_all(dir);
    });
}
