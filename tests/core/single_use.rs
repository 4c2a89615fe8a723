//! Single-use states: verified once fleet-wide through a replay store, refused
//! with `replayed` after, and fail-closed when the store cannot record them;
//! multi-use states never reach the store.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use metrics_util::debugging::DebuggingRecorder;
use stateseal::boundary::{Boundary, WireError};
use stateseal::provider::BoxFuture;
use stateseal::replay::{MemoryReplayStore, Recorded, ReplayStore};
use std::time::Duration;

use stateseal::{
    Envelope, Error, KeyRing, ManualClock, MintOptions, OpenOptions, Opened, ProviderError,
    RejectReason, RequestIdentity, RingHandle, RingKey, Secret, SingleUse, TokenFormat, UnixTime,
};

use crate::recorded::{block_on_recorded, values};

const T0: UnixTime = UnixTime::from_secs(1_782_345_600);

fn envelope(v2: bool) -> Arc<Envelope> {
    let secret = Secret::new(vec![7; 32]).expect("secret");
    let format = if v2 { TokenFormat::V2 } else { TokenFormat::V1 };
    let ring = KeyRing::from_keys(vec![Arc::new(RingKey::with_format(&secret, format))]);
    let ring = Arc::new(RingHandle::new(ring.expect("ring")));
    Arc::new(
        Envelope::builder(ring, Some("bank"))
            .clock(Arc::new(ManualClock::new(T0)))
            .build()
            .expect("envelope"),
    )
}

fn round(tool: &str) -> RequestIdentity {
    RequestIdentity::from_json(
        "tools/call",
        format!(r#"{{"name":"{tool}","arguments":{{"amount":5}}}}"#).as_bytes(),
    )
    .expect("round")
}

/// A replay store that counts its calls and answers what it is told.
#[derive(Debug)]
struct Scripted {
    calls: AtomicUsize,
    fail: bool,
    inner: MemoryReplayStore,
}

impl Scripted {
    fn new(fail: bool) -> Arc<Self> {
        Arc::new(Self {
            calls: AtomicUsize::new(0),
            fail,
            inner: memory(),
        })
    }
}

impl ReplayStore for Scripted {
    fn record<'a>(&'a self, single_use: &'a SingleUse) -> BoxFuture<'a, Result<Recorded, Error>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.fail {
            return Box::pin(std::future::ready(Err(Error::Provider(
                ProviderError::ReplayStore {
                    uri: "scripted://".into(),
                    problem: "unreachable".into(),
                },
            ))));
        }
        self.inner.record(single_use)
    }
    fn uri(&self) -> &str {
        "scripted://"
    }
}

/// A memory store made an hour before the envelopes' states, then on their clock.
fn memory() -> MemoryReplayStore {
    let clock = Arc::new(ManualClock::new(T0 - Duration::from_secs(3600)));
    let store = MemoryReplayStore::with_clock(clock.clone());
    clock.set(T0);
    store
}

fn boundary(store: Option<Arc<dyn ReplayStore>>) -> Boundary {
    let mut b = Boundary::builder(envelope(true)).single_use("tools/call", "transfer");
    if let Some(s) = store {
        b = b.replay_store(s);
    }
    b.build()
}

#[test]
fn a_single_use_state_verifies_once_and_is_refused_as_replayed_after() {
    let store = Scripted::new(false);
    let b = boundary(Some(store.clone()));
    let transfer = round("transfer");
    assert!(b.is_single_use(&transfer));
    let token = b.seal(&transfer, "confirm", &Ok(None)).expect("sealed");
    assert!(token.starts_with("v2."), "{token}");
    // The reason, as counted (a metrics recorder is local to this thread;
    // the log line carries the same `RejectReason::Replayed`).
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let (first, second) = block_on_recorded(&recorder, || async {
        (
            b.admit(&transfer, Some(&token), &Ok(None)).await,
            b.admit(&transfer, Some(&token), &Ok(None)).await,
        )
    });
    assert_eq!(first, Ok(Some("confirm".to_owned())));
    assert_eq!(second, Err(WireError::invalid_state()));
    assert_eq!(store.calls.load(Ordering::SeqCst), 2);
    assert_eq!(values(&snapshotter)["stateseal_replays_refused_total"], 1.0);
    assert!(!b.replay_store_failing(), "a replay is the store working");
}

#[tokio::test]
async fn multi_use_states_never_reach_the_store() {
    let store = Scripted::new(true);
    let b = boundary(Some(store.clone()));
    let deploy = round("deploy");
    assert!(!b.is_single_use(&deploy));
    let token = b.seal(&deploy, "step-2", &Ok(None)).expect("sealed");
    for _ in 0..3 {
        assert_eq!(
            b.admit(&deploy, Some(&token), &Ok(None)).await,
            Ok(Some("step-2".to_owned()))
        );
    }
    assert_eq!(
        b.open(&deploy, Some(&token), &Ok(None)),
        Ok(Some("step-2".into()))
    );
    assert_eq!(
        store.calls.load(Ordering::SeqCst),
        0,
        "a failing store is never asked"
    );
}

#[test]
fn a_store_that_fails_refuses_single_use_states_and_nothing_else() {
    let store = Scripted::new(true);
    let b = boundary(Some(store.clone()));
    let transfer = round("transfer");
    let token = b.seal(&transfer, "confirm", &Ok(None)).expect("sealed");
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let refused = block_on_recorded(&recorder, || b.admit(&transfer, Some(&token), &Ok(None)));
    assert_eq!(refused, Err(WireError::invalid_state()));
    assert_eq!(
        values(&snapshotter)["stateseal_replay_store_errors_total"],
        1.0
    );
    // No store at all: the same refusal, never an acceptance.
    let bare = boundary(None);
    let refused = block_on_recorded(&recorder, || bare.admit(&transfer, Some(&token), &Ok(None)));
    assert_eq!(refused, Err(WireError::invalid_state()));
    assert_eq!(
        values(&snapshotter)["stateseal_replay_store_errors_total"],
        1.0
    );
    assert_eq!(store.calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn the_plain_verify_paths_refuse_single_use_states() {
    let store = Scripted::new(false);
    let b = boundary(Some(store.clone()));
    let transfer = round("transfer");
    let token = b.seal(&transfer, "confirm", &Ok(None)).expect("sealed");
    assert_eq!(
        b.open(&transfer, Some(&token), &Ok(None)),
        Err(WireError::invalid_state())
    );
    assert_eq!(
        b.envelope()
            .open(&transfer, &token, OpenOptions::new())
            .map(|o| o.state),
        Err(Error::Rejected(RejectReason::ReplayStoreUnavailable))
    );
    // Nothing recorded by the refusals: the state still verifies once.
    assert_eq!(store.calls.load(Ordering::SeqCst), 0);
    assert!(b.admit(&transfer, Some(&token), &Ok(None)).await.is_ok());
}

#[tokio::test]
async fn a_state_failing_another_check_never_reaches_the_store() {
    let store = Scripted::new(false);
    let b = boundary(Some(store.clone()));
    let transfer = round("transfer");
    let token = b
        .envelope()
        .mint(
            &transfer,
            b"confirm",
            MintOptions::new()
                .at(T0 - Duration::from_secs(3600))
                .single_use(true),
        )
        .expect("minted an hour ago");
    assert_eq!(
        b.envelope()
            .open(
                &transfer,
                &token,
                OpenOptions::new().at(T0).records_single_use(true)
            )
            .unwrap_err(),
        Error::Rejected(RejectReason::Expired)
    );
    let other = round("transfer-all");
    let fresh = b.seal(&transfer, "confirm", &Ok(None)).expect("sealed");
    assert!(b.admit(&other, Some(&fresh), &Ok(None)).await.is_err());
    assert!(b.admit(&transfer, Some(&token), &Ok(None)).await.is_err());
    assert_eq!(store.calls.load(Ordering::SeqCst), 0);
}

#[test]
fn single_use_states_need_a_v2_key() {
    let env = envelope(false);
    let err = env
        .mint(
            &round("transfer"),
            "confirm",
            MintOptions::new().single_use(true),
        )
        .unwrap_err();
    assert!(err.to_string().contains("v2 key"), "{err}");
    let b = Boundary::builder(env)
        .replay_store(Arc::new(MemoryReplayStore::new()))
        .single_use("tools/call", "transfer")
        .build();
    assert_eq!(
        b.seal(&round("transfer"), "confirm", &Ok(None)),
        Err(WireError::internal())
    );
}

#[test]
fn racing_presentations_admit_exactly_one() {
    let store: Arc<dyn ReplayStore> = Arc::new(memory());
    let b = boundary(Some(store));
    let transfer = round("transfer");
    for _ in 0..50 {
        let token = b.seal(&transfer, "confirm", &Ok(None)).expect("sealed");
        let admitted: usize = std::thread::scope(|s| {
            let racers: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        let rt = tokio::runtime::Builder::new_current_thread()
                            .build()
                            .expect("rt");
                        rt.block_on(b.admit(&transfer, Some(&token), &Ok(None)))
                            .is_ok() as usize
                    })
                })
                .collect();
            racers.into_iter().map(|r| r.join().expect("racer")).sum()
        });
        assert_eq!(admitted, 1);
    }
}

#[tokio::test]
async fn records_expire_after_the_state_and_the_skew() {
    let clock = Arc::new(ManualClock::new(T0 - Duration::from_secs(3600)));
    let store = MemoryReplayStore::with_clock(clock.clone());
    clock.set(T0);
    let env = envelope(true);
    let transfer = round("transfer");
    let token = env
        .mint(&transfer, b"c", MintOptions::new().at(T0).single_use(true))
        .expect("minted");
    let Opened {
        single_use: once, ..
    } = env
        .open(
            &transfer,
            &token,
            OpenOptions::new().at(T0).records_single_use(true),
        )
        .expect("opened");
    let once = once.expect("single-use");
    assert_eq!(once.keep_until(), T0 + env.ttl() + Duration::from_secs(60));
    assert_eq!(store.record(&once).await, Ok(Recorded::First));
    clock.set(once.keep_until() - Duration::from_secs(1));
    assert_eq!(store.record(&once).await, Ok(Recorded::Replay));
    clock.set(once.keep_until());
    assert_eq!(
        store.record(&once).await,
        Ok(Recorded::First),
        "kept no longer than needed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_memory_store_keeps_the_replay_contract() {
    stateseal_contract::replay::run(Arc::new(MemoryReplayStore::new())).await;
}

/// A `transfer` state minted by an instance that does not treat the round as
/// single-use (one without the setting, or from before the rollout) carries
/// no `u` claim; an instance that does refuses it on every path, every time,
/// with its own logged reason and the frozen error on the wire.
#[tokio::test]
async fn a_state_of_a_single_use_round_without_the_claim_is_refused() {
    let store = Scripted::new(false);
    let strict = boundary(Some(store.clone()));
    let lax = Boundary::builder(strict.envelope().clone()).build();
    let transfer = round("transfer");
    let token = lax.seal(&transfer, "confirm", &Ok(None)).expect("sealed");
    assert_eq!(
        lax.admit(&transfer, Some(&token), &Ok(None)).await,
        Ok(Some("confirm".to_owned())),
        "the instance without the setting accepts its own state"
    );
    let logs = stateseal_testkit::logs::Logs::default();
    let guard = logs.capture();
    for _ in 0..3 {
        assert_eq!(
            strict.admit(&transfer, Some(&token), &Ok(None)).await,
            Err(WireError::invalid_state())
        );
        assert_eq!(
            strict.open(&transfer, Some(&token), &Ok(None)),
            Err(WireError::invalid_state())
        );
    }
    drop(guard);
    let text = logs.text();
    assert_eq!(
        text.matches("single-use claim missing").count(),
        6,
        "{text}"
    );
    assert!(!text.contains("confirm"), "no plaintext in the log: {text}");
    assert_eq!(store.calls.load(Ordering::SeqCst), 0, "nothing recorded");
    // The same state for a multi-use round of the strict instance still works.
    let deploy = round("deploy");
    let multi = lax.seal(&deploy, "step-2", &Ok(None)).expect("sealed");
    assert_eq!(
        strict.admit(&deploy, Some(&multi), &Ok(None)).await,
        Ok(Some("step-2".to_owned()))
    );
}

/// A store made after a state was issued (a restarted instance's memory
/// store, a Redis that restarted empty) may have lost its record: refused.
#[tokio::test]
async fn a_state_issued_before_the_stores_epoch_is_refused() {
    let clock = Arc::new(ManualClock::new(T0 + Duration::from_secs(30)));
    let store = Arc::new(MemoryReplayStore::with_clock(clock.clone()));
    assert_eq!(store.epoch(), T0 + Duration::from_secs(30));
    let b = boundary(Some(store.clone()));
    let transfer = round("transfer");
    let token = b
        .seal(&transfer, "confirm", &Ok(None))
        .expect("sealed at T0");
    let logs = stateseal_testkit::logs::Logs::default();
    let guard = logs.capture();
    assert_eq!(
        b.admit(&transfer, Some(&token), &Ok(None)).await,
        Err(WireError::invalid_state())
    );
    drop(guard);
    assert!(
        logs.text()
            .contains("issued before the replay store's epoch"),
        "{}",
        logs.text()
    );
    assert!(store.is_empty(), "nothing recorded for a refused state");
    assert!(!b.replay_store_failing(), "the store is working");
}
