//! The bench the integrity suite attacks from: an instance pinned to a
//! keyset in the store under test, the attacker's edits of the stored
//! envelope (store write access, no KEK), and the checks after each one.

use crate::instant;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use base64_simd::STANDARD as B64;
use stateseal::keyset::KeysetPins;
use stateseal::rotation::{
    DEFAULT_MAX_LIVE_KEYS, KeysetTrust, RotateMode, SchedulerConfig, Timing, TrustPolicy,
    init_keyset, rotate_keyset,
};
use stateseal::{
    Error, FileStore, KeysetError, KeysetRefusal, KeysetStore, LocalProvider, ManualClock,
    MintOptions, OpenOptions, ProviderRegistry, RingHandle, RotationScheduler, StoredKeyset,
};

use super::{CountingLocal, PlaintextWrap, T0};
use crate::keysets;
use crate::member::round;
use crate::store::StoreUnderTest;

pub(super) struct Bench<'a, S: StoreUnderTest> {
    pub(super) s: &'a S,
    pub(super) store: Arc<dyn KeysetStore>,
    pub(super) registry: ProviderRegistry,
    pub(super) kms: Arc<CountingLocal>,
    pub(super) trust: TrustPolicy,
    pub(super) sched: RotationScheduler,
    pub(super) env: stateseal::Envelope,
    pub(super) t: f64,
    /// The KEK every key of the keyset is wrapped under (pinned by its folder).
    pub(super) kek: String,
    /// The keyset's id.
    pub(super) id: String,
}

pub(super) fn kek_in(dir: &Path, segment: &str) -> String {
    let d = dir.join("keks").join(segment);
    std::fs::create_dir_all(&d).expect("kek dir");
    let path = d.join("kek.bin");
    if !path.exists() {
        LocalProvider::create_kek(&path).expect("kek");
    }
    format!("local://{}", path.display())
}

/// A keyset made by a KEK holder in a scratch file: what `put_raw` then puts in place.
pub(super) async fn seed(
    registry: &ProviderRegistry,
    dir: &Path,
    name: &str,
    kek: &str,
) -> StoredKeyset {
    let file = FileStore::new(dir.join(name));
    let _ = std::fs::remove_file(file.path());
    init_keyset(
        &file,
        registry,
        kek,
        Timing::new(
            Duration::from_secs(10),
            Duration::from_secs(5),
            Duration::from_secs(100),
        ),
        instant(T0),
    )
    .await
    .expect("init");
    keysets::stored(&file).await
}

pub(super) fn json(stored: &StoredKeyset) -> serde_json::Value {
    serde_json::from_slice(stored.bytes()).expect("json")
}

pub(super) fn payload(envelope: &serde_json::Value) -> Vec<u8> {
    B64.decode_to_vec(envelope["payload"].as_str().expect("payload"))
        .expect("base64")
}

pub(super) fn with_payload(envelope: &serde_json::Value, bytes: &[u8]) -> serde_json::Value {
    let mut e = envelope.clone();
    e["payload"] = B64.encode_to_string(bytes).into();
    e
}

/// `envelope` with its payload parsed, edited and written back (no key needed; no valid tag either).
pub(super) fn edited(
    envelope: &serde_json::Value,
    edit: impl Fn(&mut serde_json::Value),
) -> serde_json::Value {
    let mut p: serde_json::Value =
        serde_json::from_slice(&payload(envelope)).expect("payload json");
    edit(&mut p);
    with_payload(envelope, &serde_json::to_vec(&p).expect("json"))
}

impl<S: StoreUnderTest> Bench<'_, S> {
    pub(super) async fn current(&self) -> serde_json::Value {
        json(&keysets::stored(&*self.store).await)
    }

    /// What the store holds now, bytes or the error reading them gives.
    pub(super) async fn raw(&self) -> Result<Option<Vec<u8>>, String> {
        match self.store.load().await {
            Ok(d) => Ok(d.map(|d| d.bytes().to_vec())),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Seals a new state and verifies it and `token` (sealed before an attack).
    pub(super) fn works(&self, now: f64, token: &str) -> bool {
        let now = instant(now);
        self.env
            .mint(&round(), b"s", MintOptions::new().at(now))
            .and_then(|t| self.env.open(&round(), &t, OpenOptions::new().at(now)))
            .is_ok()
            && self
                .env
                .open(&round(), token, OpenOptions::new().at(now))
                .is_ok()
    }

    /// Puts `attack` in place; the instance refuses it with `reason` (having
    /// asked the KMS at most `calls` times), keeps serving, writes nothing;
    /// then the authentic document goes back and a rotation is adopted.
    pub(super) async fn refuses(
        &mut self,
        what: &str,
        attack: serde_json::Value,
        reason: KeysetRefusal,
        calls: u64,
    ) {
        let good = self.current().await;
        // The ring as it is now, so that only the attack could change it.
        self.sched
            .refresh_at(instant(self.t))
            .await
            .unwrap_or_else(|e| panic!("{what}: before the attack: {e}"));
        let primary = self.sched.status().ring.first().cloned();
        let token = self
            .env
            .mint(&round(), b"before", MintOptions::new().at(instant(self.t)))
            .expect("mint");
        self.s.put_raw(&attack);
        let placed = self.raw().await;
        let before = self.kms.unwraps();
        let err = self
            .sched
            .refresh_at(instant(self.t))
            .await
            .expect_err(&format!("{what}: adopted"));
        assert!(
            matches!(&err, Error::Keyset(KeysetError::Refused { reason: r, .. }) if *r == reason),
            "{what}: expected refusal {reason}, got {err}"
        );
        assert!(
            self.kms.unwraps() - before <= calls,
            "{what}: {} KMS calls for a refusal that needs at most {calls}",
            self.kms.unwraps() - before
        );
        assert!(self.sched.is_ready(), "{what}: not ready");
        assert_eq!(
            self.sched.status().ring.first().cloned(),
            primary,
            "{what}: the primary changed"
        );
        assert!(
            self.works(self.t, &token),
            "{what}: the instance stopped serving"
        );
        assert_eq!(self.raw().await, placed, "{what}: the instance wrote");
        // The operator puts the authentic document back and rotates; the instance adopts it.
        self.s.put_raw(&good);
        self.t += 1.0;
        self.sched
            .refresh_at(instant(self.t))
            .await
            .unwrap_or_else(|e| panic!("{what}: restored: {e}"));
        self.rotate(what, RotateMode::Scheduled).await;
        self.t += 300.0;
    }

    /// The authentic document put back, and adopted again.
    pub(super) async fn restore(&mut self, good: &serde_json::Value) {
        self.s.put_raw(good);
        self.t += 1.0;
        self.sched
            .refresh_at(instant(self.t))
            .await
            .expect("the authentic document again");
    }

    pub(super) async fn rotate(&mut self, what: &str, mode: RotateMode) {
        self.t += 1.0;
        let trust = KeysetTrust::new(self.trust.clone());
        let plan = rotate_keyset(
            &*self.store,
            &self.registry,
            &trust,
            None,
            instant(self.t),
            mode,
            DEFAULT_MAX_LIVE_KEYS,
        )
        .await
        .unwrap_or_else(|e| panic!("{what}: rotation: {e}"));
        self.t += 1.0;
        let st = self
            .sched
            .refresh_at(instant(self.t))
            .await
            .unwrap_or_else(|e| panic!("{what}: rotation not adopted: {e}"));
        assert!(
            st.generation >= Some(plan.next.generation),
            "{what}: the rotation was not adopted ({:?} < {})",
            st.generation,
            plan.next.generation
        );
    }
}

/// `err` is a refusal for `reason`.
pub(super) fn assert_refused(err: &Error, reason: KeysetRefusal) {
    assert!(
        matches!(err, Error::Keyset(KeysetError::Refused { reason: r, .. }) if *r == reason),
        "expected a refusal for {reason}, got {err}"
    );
}

/// The folder of a `local://` KEK as a pin prefix (`…/keks/p1/`).
pub(super) fn prefix_of(kek: &str) -> String {
    format!("{}/", kek.trim_end_matches("/kek.bin"))
}

impl<'a, S: StoreUnderTest> Bench<'a, S> {
    /// The keyset the suite attacks, made under a `local://` KEK in `dir`
    /// and put in place; an instance pinned to it (by KEK prefix) adopts it.
    pub(super) async fn new(s: &'a S, dir: &Path) -> Self {
        let kms = Arc::new(CountingLocal::default());
        let mut registry = ProviderRegistry::with_defaults();
        registry.register_provider(kms.clone());
        registry.register_provider(Arc::new(PlaintextWrap));
        let kek = kek_in(dir, "p1");
        let ours = seed(&registry, dir, "ours.json", &kek).await;
        let id = ours.id().to_owned();
        s.put_raw(&json(&ours));
        // Pinned by prefix: `…/keks/p1/` must never match `…/keks/p10/…`.
        let prefix = prefix_of(&kek);
        let trust = TrustPolicy {
            pins: Some(KeysetPins::new(&id, [prefix]).expect("pins")),
            ..TrustPolicy::default()
        };
        let store = s.open();
        let ring = Arc::new(RingHandle::empty());
        let config = SchedulerConfig::builder()
            .timing(Timing::new(
                Duration::from_secs(10),
                Duration::from_secs(5),
                Duration::from_secs(100),
            ))
            .rotation_period(None)
            .trust(trust.clone())
            .build()
            .expect("config");
        let sched = RotationScheduler::new(
            config,
            store.clone(),
            registry.clone(),
            ring.clone(),
            Arc::new(ManualClock::new(instant(T0))),
        )
        .expect("scheduler");
        sched.refresh_at(instant(T0)).await.expect("first refresh");
        let env = stateseal::Envelope::builder(ring, Some("svc"))
            .build()
            .expect("envelope");
        Bench {
            s,
            store,
            registry: registry.clone(),
            kms: kms.clone(),
            trust: trust.clone(),
            sched,
            env,
            t: T0 + 10.0,
            kek,
            id,
        }
    }
}
