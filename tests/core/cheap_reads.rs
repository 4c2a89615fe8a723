//! What a refresh costs the store: a conditional read that finds the
//! document unchanged adopts nothing new (but still checks its freshness),
//! and nothing a request carries (a forged key id) makes an instance read
//! the store beyond its own pace.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use stateseal::keyset::{ConditionalLoad, StoreVersion};
use stateseal::provider::BoxFuture;
use stateseal::rotation::{SchedulerConfig, Timing};
use stateseal::{
    AesGcmCodec, Error, KeysetError, KeysetRefusal, KeysetStore, ManualClock, RejectReason,
    RingHandle, RotationScheduler, StateCodec, StoredKeyset, UnixTime,
};
use stateseal_testkit::instant;
use stateseal_testkit::keysets;

use crate::fleet::{local_keyset, local_registry};

const T0: f64 = 1_782_345_600.0;

/// A document in memory with versions (its generation), counting reads: no
/// I/O, so paused-time tests see only the scheduler's own timers.
#[derive(Debug)]
struct CountingStore {
    doc: Mutex<StoredKeyset>,
    reads: AtomicUsize,
    unchanged: AtomicUsize,
}

impl CountingStore {
    fn new(doc: StoredKeyset) -> Arc<Self> {
        Arc::new(Self {
            doc: Mutex::new(doc),
            reads: AtomicUsize::new(0),
            unchanged: AtomicUsize::new(0),
        })
    }
    fn reads(&self) -> usize {
        self.reads.load(Ordering::SeqCst)
    }
    fn current(&self) -> StoredKeyset {
        self.doc.lock().expect("lock").clone()
    }
}

impl KeysetStore for CountingStore {
    fn uri(&self) -> &str {
        "memory://counting"
    }
    fn load(&self) -> BoxFuture<'_, Result<Option<StoredKeyset>, Error>> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move { Ok(Some(self.current())) })
    }
    fn load_if_changed<'a>(
        &'a self,
        seen: Option<&'a StoreVersion>,
    ) -> BoxFuture<'a, Result<ConditionalLoad, Error>> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            let doc = self.current();
            let version = StoreVersion::new(doc.generation().to_string());
            if seen == Some(&version) {
                self.unchanged.fetch_add(1, Ordering::SeqCst);
                return Ok(ConditionalLoad::Unchanged);
            }
            Ok(ConditionalLoad::Current {
                document: Some(doc),
                version: Some(version),
            })
        })
    }
    fn compare_and_swap<'a>(
        &'a self,
        expected: Option<u64>,
        doc: &'a StoredKeyset,
    ) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            let mut current = self.doc.lock().expect("lock");
            if Some(current.generation()) != expected {
                return Err(Error::Keyset(KeysetError::Conflict {
                    expected,
                    found: Some(current.generation()),
                }));
            }
            *current = doc.clone();
            Ok(())
        })
    }
}

fn config() -> SchedulerConfig {
    SchedulerConfig::builder()
        .timing(Timing::new(
            Duration::from_secs(30),
            Duration::from_secs(60),
            Duration::from_secs(600),
        ))
        .rotation_period(None)
        .renew_keyset(false)
        .build()
        .expect("config")
}

async fn counting_instance(tag: &str) -> (Arc<CountingStore>, RotationScheduler) {
    let registry = local_registry();
    let (_dir, file) = local_keyset(
        tag,
        &registry,
        Timing::new(
            Duration::from_secs(30),
            Duration::from_secs(60),
            Duration::from_secs(600),
        ),
        T0,
    )
    .await;
    let store = CountingStore::new(keysets::stored(file.as_ref()).await);
    let pins = keysets::pins_of(file.as_ref(), &registry).await;
    let sched = RotationScheduler::new(
        config().to_builder().trust(pins).build().expect("config"),
        store.clone(),
        registry,
        Arc::new(RingHandle::empty()),
        Arc::new(ManualClock::new(
            UnixTime::from_secs_f64(T0).expect("a finite time"),
        )),
    )
    .expect("scheduler");
    (store, sched)
}

#[tokio::test]
async fn an_unchanged_document_is_not_opened_again_but_still_goes_stale() {
    let (store, sched) = counting_instance("cheap-unchanged").await;
    let first = sched.refresh_at(instant(T0)).await.expect("first refresh");
    let calls = sched.kms_calls();
    for i in 1..=5 {
        let st = sched
            .refresh_at(instant(T0 + 30.0 * f64::from(i)))
            .await
            .expect("refresh");
        assert_eq!(st.generation, first.generation);
        assert_eq!(st.last_store_read, Some(instant(T0 + 30.0 * f64::from(i))));
    }
    assert_eq!(store.unchanged.load(Ordering::SeqCst), 5);
    assert_eq!(
        sched.kms_calls(),
        calls,
        "an unchanged document costs no KMS call"
    );

    // The document it holds went stale: unchanged is not fresh.
    let expires_at = first.expires_at.expect("an authenticated keyset expires");
    sched
        .refresh_at(expires_at - Duration::from_secs(10))
        .await
        .expect("still fresh");
    let err = sched
        .refresh_at(expires_at + Duration::from_secs(1))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            Error::Keyset(KeysetError::Refused {
                reason: KeysetRefusal::Expired,
                ..
            })
        ),
        "{err}"
    );
    assert_eq!(store.unchanged.load(Ordering::SeqCst), 7);
}

#[tokio::test]
async fn a_changed_document_is_adopted_by_the_next_conditional_read() {
    let registry = local_registry();
    let (store, sched) = counting_instance("cheap-changed").await;
    sched.refresh_at(instant(T0)).await.expect("first refresh");
    let next = keysets::resealed(store.as_ref(), &registry, |_| {}).await;
    let st = sched.refresh_at(instant(T0 + 30.0)).await.expect("refresh");
    assert_eq!(st.generation, Some(next.generation));
    assert_eq!(store.unchanged.load(Ordering::SeqCst), 0);
    sched.refresh_at(instant(T0 + 60.0)).await.expect("refresh");
    assert_eq!(store.unchanged.load(Ordering::SeqCst), 1);
}

/// Anyone can forge a token naming a key id the ring does not hold; it is
/// rejected, and the store is read only at the refresh loop's own pace.
#[tokio::test(start_paused = true)]
async fn forged_key_ids_cost_no_store_read() {
    let (store, sched) = counting_instance("cheap-forged").await;
    sched.refresh_at(instant(T0)).await.expect("first refresh");
    assert_eq!(store.reads(), 1);
    let codec = AesGcmCodec::new(sched.ring());
    let loop_task = sched.spawn();
    let foreign = AesGcmCodec::new(Arc::new(RingHandle::new(
        stateseal::KeyRing::from_secrets(&[stateseal::Secret::new(vec![7; 32]).expect("secret")])
            .expect("ring"),
    )));
    for i in 0..50u8 {
        let forged = foreign.seal(&[i]).expect("seal");
        assert_eq!(
            codec.unseal(&forged).unwrap_err().reject_reason(),
            Some(RejectReason::UnknownKey)
        );
        tokio::task::yield_now().await;
    }
    assert_eq!(
        store.reads(),
        1,
        "a forged key id made the instance read the store"
    );
    // The loop itself reads within one refresh interval (its first wait is a random part of it).
    tokio::time::advance(Duration::from_secs(30)).await;
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
    assert_eq!(store.reads(), 2, "the refresh loop reads at its own pace");
    loop_task.abort();
}
