//! What a writer without the KEK can do to a keyset in any store: nothing the
//! fleet adopts. Run by every backend's own tests after [`crate::store_contract`],
//! with `put_raw` as the attacker's write access.
//!
//! Each edit below is put in place with store write access alone; a pinned
//! instance (renewals and seal reservations on, so a writer that re-tagged
//! what it read would show) must refuse it with its own reason, keep sealing
//! and verifying with the last authentic keys, and write nothing; the
//! authentic document is then put back and a legitimate rotation is adopted.
//! Where the refusal is the pins', the KMS must not have been asked at all.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use base64_simd::STANDARD as B64;
use stateseal::keyset::KeysetPins;
use stateseal::provider::{BoxFuture, DataKey, ErrorClass, KeyProvider, WrapContext};
use stateseal::rotation::{
    DEFAULT_MAX_LIVE_KEYS, KeysetTrust, RotateMode, SchedulerConfig, Timing, TrustPolicy,
    init_keyset, rotate_keyset, seal_with_new_mac_key,
};
use stateseal::{
    Error, FileStore, KeysetStore, LocalProvider, ManualClock, ProviderRegistry, RingHandle,
    RotationScheduler, Secret, StoredKeyset,
};

use crate::keysets;
use crate::member::{instance, round};
use crate::store_contract::StoreUnderTest;

const T0: f64 = 1_782_345_600.0;

/// The `local` provider, counting its calls: "zero KMS calls" is measured here.
#[derive(Debug, Default)]
pub struct CountingLocal {
    unwraps: AtomicU64,
    generates: AtomicU64,
    refuse_generate: bool,
}

impl CountingLocal {
    /// One whose generate calls are all refused as `Denied` (still counted),
    /// as AWS KMS refuses a role without `kms:GenerateDataKey`: a pod that
    /// can read keys but never make one.
    pub fn refusing_generate() -> Self {
        Self {
            refuse_generate: true,
            ..Self::default()
        }
    }

    /// Unwraps asked for so far.
    pub fn unwraps(&self) -> u64 {
        self.unwraps.load(Ordering::SeqCst)
    }

    /// Data keys generated so far.
    pub fn generates(&self) -> u64 {
        self.generates.load(Ordering::SeqCst)
    }
}

impl KeyProvider for CountingLocal {
    fn scheme(&self) -> &'static str {
        LocalProvider::SCHEME
    }
    fn generate<'a>(
        &'a self,
        kek: &'a str,
        ctx: WrapContext<'a>,
    ) -> BoxFuture<'a, Result<DataKey, Error>> {
        self.generates.fetch_add(1, Ordering::SeqCst);
        if self.refuse_generate {
            return Box::pin(async {
                Err(stateseal::provider::provider_failure(
                    LocalProvider::SCHEME,
                    ErrorClass::Denied,
                    "generate",
                    "AccessDeniedException: not authorized to perform GenerateDataKey",
                ))
            });
        }
        Box::pin(async move { LocalProvider::new().generate(kek, ctx).await })
    }
    fn unwrap<'a>(
        &'a self,
        kek: &'a str,
        wrapped: &'a [u8],
        ctx: WrapContext<'a>,
    ) -> BoxFuture<'a, Result<Secret, Error>> {
        self.unwraps.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move { LocalProvider::new().unwrap(kek, wrapped, ctx).await })
    }
}

/// A "KMS" whose wrapped form is the key itself (its first 32 bytes; anything
/// after is salt): lets a test re-wrap an existing key under a new KEK, wrap
/// one key two ways, or put the same key in two entries (no real provider
/// can wrap a given key through the `KeyProvider` interface). For tests only,
/// obviously.
#[derive(Debug)]
pub struct PlaintextWrap;

impl PlaintextWrap {
    /// Its scheme.
    pub const SCHEME: &'static str = "plaintext-test";
}

impl KeyProvider for PlaintextWrap {
    fn scheme(&self) -> &'static str {
        Self::SCHEME
    }
    fn generate<'a>(
        &'a self,
        _kek: &'a str,
        _ctx: WrapContext<'a>,
    ) -> BoxFuture<'a, Result<DataKey, Error>> {
        Box::pin(async {
            let plaintext = Secret::generate()?;
            let wrapped = plaintext.expose().to_vec();
            Ok(DataKey { plaintext, wrapped })
        })
    }
    fn unwrap<'a>(
        &'a self,
        _kek: &'a str,
        wrapped: &'a [u8],
        _ctx: WrapContext<'a>,
    ) -> BoxFuture<'a, Result<Secret, Error>> {
        Box::pin(async move {
            let key = wrapped.get(..32).ok_or_else(|| {
                stateseal::provider::kms_error(Self::SCHEME, ErrorClass::Invalid, "short")
            })?;
            Secret::new(key.to_vec())
        })
    }
}

struct Bench<'a, S: StoreUnderTest> {
    s: &'a S,
    store: Arc<dyn KeysetStore>,
    registry: ProviderRegistry,
    kms: Arc<CountingLocal>,
    trust: TrustPolicy,
    sched: RotationScheduler,
    env: stateseal::Envelope,
    t: f64,
}

fn kek_in(dir: &Path, segment: &str) -> String {
    let d = dir.join("keks").join(segment);
    std::fs::create_dir_all(&d).expect("kek dir");
    let path = d.join("kek.bin");
    if !path.exists() {
        LocalProvider::create_kek(&path).expect("kek");
    }
    format!("local://{}", path.display())
}

/// A keyset made by a KEK holder in a scratch file: what `put_raw` then puts in place.
async fn seed(registry: &ProviderRegistry, dir: &Path, name: &str, kek: &str) -> StoredKeyset {
    let file = FileStore::new(dir.join(name));
    let _ = std::fs::remove_file(file.path());
    init_keyset(&file, registry, kek, Timing::new(10.0, 5.0, 100.0), T0)
        .await
        .expect("init");
    keysets::stored(&file).await
}

fn json(stored: &StoredKeyset) -> serde_json::Value {
    serde_json::from_slice(stored.bytes()).expect("json")
}

fn payload(envelope: &serde_json::Value) -> Vec<u8> {
    B64.decode_to_vec(envelope["payload"].as_str().expect("payload"))
        .expect("base64")
}

fn with_payload(envelope: &serde_json::Value, bytes: &[u8]) -> serde_json::Value {
    let mut e = envelope.clone();
    e["payload"] = B64.encode_to_string(bytes).into();
    e
}

/// `envelope` with its payload parsed, edited and written back (no key needed; no valid tag either).
fn edited(
    envelope: &serde_json::Value,
    edit: impl Fn(&mut serde_json::Value),
) -> serde_json::Value {
    let mut p: serde_json::Value =
        serde_json::from_slice(&payload(envelope)).expect("payload json");
    edit(&mut p);
    with_payload(envelope, &serde_json::to_vec(&p).expect("json"))
}

impl<S: StoreUnderTest> Bench<'_, S> {
    async fn current(&self) -> serde_json::Value {
        json(&keysets::stored(&*self.store).await)
    }

    /// What the store holds now, bytes or the error reading them gives.
    async fn raw(&self) -> Result<Option<Vec<u8>>, String> {
        match self.store.load().await {
            Ok(d) => Ok(d.map(|d| d.bytes().to_vec())),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Seals a new state and verifies it and `token` (sealed before an attack).
    fn works(&self, now: f64, token: &str) -> bool {
        self.env
            .mint_at(&round(), b"s", None, now)
            .and_then(|t| self.env.verify_at(&round(), &t, None, now))
            .is_ok()
            && self.env.verify_at(&round(), token, None, now).is_ok()
    }

    /// Puts `attack` in place; the instance refuses it with `reason` (having
    /// asked the KMS at most `calls` times), keeps serving, writes nothing;
    /// then the authentic document goes back and a rotation is adopted.
    async fn refuses(&mut self, what: &str, attack: serde_json::Value, reason: &str, calls: u64) {
        let good = self.current().await;
        // The ring as it is now, so that only the attack could change it.
        self.sched
            .refresh_at(self.t)
            .await
            .unwrap_or_else(|e| panic!("{what}: before the attack: {e}"));
        let primary = self.sched.status().ring.first().cloned();
        let token = self
            .env
            .mint_at(&round(), b"before", None, self.t)
            .expect("mint");
        self.s.put_raw(&attack);
        let placed = self.raw().await;
        let before = self.kms.unwraps();
        let err = self
            .sched
            .refresh_at(self.t)
            .await
            .expect_err(&format!("{what}: adopted"));
        assert!(
            matches!(&err, Error::KeysetRefused { reason: r, .. } if *r == reason),
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
            .refresh_at(self.t)
            .await
            .unwrap_or_else(|e| panic!("{what}: restored: {e}"));
        self.rotate(what, RotateMode::Scheduled).await;
        self.t += 300.0;
    }

    /// The authentic document put back, and adopted again.
    async fn restore(&mut self, good: &serde_json::Value) {
        self.s.put_raw(good);
        self.t += 1.0;
        self.sched
            .refresh_at(self.t)
            .await
            .expect("the authentic document again");
    }

    async fn rotate(&mut self, what: &str, mode: RotateMode) {
        self.t += 1.0;
        let trust = KeysetTrust::new(self.trust.clone());
        let plan = rotate_keyset(
            &*self.store,
            &self.registry,
            &trust,
            None,
            self.t,
            mode,
            DEFAULT_MAX_LIVE_KEYS,
        )
        .await
        .unwrap_or_else(|e| panic!("{what}: rotation: {e}"));
        self.t += 1.0;
        let st = self
            .sched
            .refresh_at(self.t)
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
fn assert_refused(err: &Error, reason: &str) {
    assert!(
        matches!(err, Error::KeysetRefused { reason: r, .. } if *r == reason),
        "expected a refusal for {reason}, got {err}"
    );
}

/// The folder of a `local://` KEK as a pin prefix (`…/keks/p1/`).
fn prefix_of(kek: &str) -> String {
    format!("{}/", kek.trim_end_matches("/kek.bin"))
}

/// Runs every attack; panics naming the one that got through. `dir` holds
/// the KEKs (local files) and scratch documents.
pub async fn run(s: &impl StoreUnderTest, dir: &Path) {
    let kms = Arc::new(CountingLocal::default());
    let mut registry = ProviderRegistry::with_defaults();
    registry.register_provider(kms.clone());
    registry.register_provider(Arc::new(PlaintextWrap));
    let kek = kek_in(dir, "p1");
    let attacker_kek = kek_in(dir, "p10");
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
        .timing(Timing::new(10.0, 5.0, 100.0))
        .rotation_period(None)
        .trust(trust.clone())
        .build()
        .expect("config");
    let sched = RotationScheduler::new(
        config,
        store.clone(),
        registry.clone(),
        ring.clone(),
        Arc::new(ManualClock::new(T0)),
    )
    .expect("scheduler");
    sched.refresh_at(T0).await.expect("first refresh");
    let env =
        stateseal::Envelope::builder(Arc::new(stateseal::AesGcmCodec::new(ring)), Some("svc"))
            .build()
            .expect("envelope");
    let mut b = Bench {
        s,
        store,
        registry: registry.clone(),
        kms: kms.clone(),
        trust: trust.clone(),
        sched,
        env,
        t: T0 + 10.0,
    };

    // (c) Freeze rotation: an entry activating in 9999, reservations lowered, a retirement dropped.
    let g = b.current().await;
    let freeze = edited(&g, |p| {
        p["keys"][0]["activate_at"] = "9999-12-31T00:00:00Z".into()
    });
    b.refuses("activation in 9999", freeze, "mac", 0).await;
    let g = b.current().await;
    let lower = edited(&g, |p| p["keys"][0]["seals_reserved"] = 0.into());
    b.refuses("reservations lowered", lower, "mac", 0).await;
    let g = b.current().await;
    let keep = edited(&g, |p| {
        for k in p["keys"].as_array_mut().expect("keys") {
            k["retire_at"] = serde_json::Value::Null;
        }
    });
    b.refuses("retirement dropped", keep, "mac", 0).await;
    // The same values in other bytes: the tag covers bytes, not meanings.
    let g = b.current().await;
    let p = payload(&g);
    let mut respelled = serde_json::to_vec_pretty(
        &serde_json::from_slice::<serde_json::Value>(&p).expect("payload"),
    )
    .expect("json");
    if respelled == p {
        respelled.push(b' ');
    }
    b.refuses("re-spelled payload", with_payload(&g, &respelled), "mac", 0)
        .await;
    let g = b.current().await;
    let truncated = edited(&g, |p| {
        let keys = p["keys"].as_array_mut().expect("keys");
        keys.last_mut()
            .and_then(serde_json::Value::as_object_mut)
            .map(|e| e.remove("retire_at"));
        keys.truncate(1);
    });
    b.refuses("truncated entry", truncated, "mac", 0).await;

    // (a) KEK substitution: the attacker's own keyset material under their KEK.
    let theirs = seed(&registry, dir, "theirs.json", &kek).await;
    let g = b.current().await;
    let mut other_tag = g.clone();
    other_tag["mac"] = json(&theirs)["mac"].clone();
    // One KMS call: the other keyset's MAC key does not unwrap for this keyset id.
    b.refuses("another keyset's MAC", other_tag, "mac", 1).await;
    b.refuses(
        "another keyset's document",
        json(&theirs),
        "other_keyset",
        0,
    )
    .await;
    let current = keysets::verified(&*b.store, &registry).await.doc;
    let mut forged = current.clone();
    forged.generation += 1;
    seed(&registry, dir, "attacker.json", &attacker_kek).await;
    let mut entry = keysets::verified(&FileStore::new(dir.join("attacker.json")), &registry)
        .await
        .doc
        .keys[0]
        .clone();
    entry.activate_at = b.t;
    entry.created_at = b.t;
    forged.keys.push(entry);
    let (under_theirs, _) =
        seal_with_new_mac_key(&registry, &forged, &attacker_kek, keysets::FAR_FUTURE)
            .await
            .expect("attacker seals");
    b.refuses(
        "MAC key under the attacker's KEK (p10 vs pin p1/)",
        json(&under_theirs),
        "unpinned_kek",
        0,
    )
    .await;
    let mut old_style = forged.clone();
    for e in &mut old_style.keys {
        e.alg = stateseal::TokenFormat::V1;
    }
    let v1 = StoredKeyset::unauthenticated(&old_style).expect("v1");
    b.refuses(
        "an unauthenticated document",
        json(&v1),
        "unauthenticated",
        0,
    )
    .await;

    // Too big: refused by size, before parsing.
    match s.holds_oversized() {
        Ok(()) => {
            let mut huge = b.current().await;
            huge["padding"] = "x".repeat(stateseal::keyset::MAX_DOCUMENT_BYTES).into();
            b.refuses("a huge document", huge, "invalid", 0).await;
        }
        Err(why) => println!("integrity contract: huge document not run: {why}"),
    }

    // `rotate --now` during phase 1 is a legitimate edit: admitted.
    b.rotate("scheduled", RotateMode::Scheduled).await;
    let before_emergency = b.current().await;
    b.rotate("--now during phase 1", RotateMode::Compromise)
        .await;
    let emergency = b.sched.status().generation.expect("generation");

    // (b) Rollback: the pre-emergency authentic document, republished.
    b.t += 300.0;
    b.refuses(
        "an old authentic document",
        before_emergency.clone(),
        "rollback",
        0,
    )
    .await;
    // A restarted instance refuses it once min_generation is raised…
    let restarted = |min_generation: u64, t: f64| {
        let config = SchedulerConfig::builder()
            .timing(Timing::new(10.0, 5.0, 100.0))
            .rotation_period(None)
            .renew_keyset(false)
            .seal_reservation_block(None)
            .trust(TrustPolicy {
                min_generation,
                ..trust.clone()
            })
            .build()
            .expect("config");
        instance(config, s.open(), &registry, t)
    };
    let good = b.current().await;
    s.put_raw(&before_emergency);
    let err = restarted(emergency, b.t)
        .refresh_at(b.t)
        .await
        .expect_err("a restored backup below min_generation");
    assert_refused(&err, "below_min_generation");
    // …or once the document has gone stale.
    let stale_at = keysets::verified(&*b.store, &registry)
        .await
        .expires_at
        .expect("expires_at")
        + 1.0;
    let err = restarted(0, stale_at)
        .refresh_at(stale_at)
        .await
        .expect_err("a stale document");
    assert_refused(&err, "expired");
    // An operator who restored that backup and rotates on schedule is told,
    // before anything is written, that the fleet would refuse the result: the
    // store's newest copy (every backend keeps one) remembers the emergency.
    let newest = b
        .store
        .newest_copy()
        .expect("every backend keeps a newest copy");
    assert_eq!(
        newest.load().await.expect("copy").map(|c| c.generation()),
        good["generation"].as_u64(),
        "the copy holds the newest write"
    );
    let placed = b.raw().await;
    let err = rotate_keyset(
        &*b.store,
        &registry,
        &KeysetTrust::new(trust.clone()),
        None,
        b.t,
        RotateMode::Scheduled,
        DEFAULT_MAX_LIVE_KEYS,
    )
    .await
    .expect_err("a scheduled rotation on a restored backup");
    assert!(
        matches!(&err, Error::BehindNewest(m) if m.contains("restored backup") && m.contains(newest.uri())),
        "{err}"
    );
    assert_eq!(b.raw().await, placed, "the refused rotation wrote");
    // A restarted server with the library's defaults (renewals on, rotation by
    // age) has no watermark and adopts the backup, but neither renews, claims
    // on nor rotates it: its writes take the operator's floor, the newest copy.
    let writer = instance(
        SchedulerConfig::builder()
            .timing(Timing::new(10.0, 5.0, 100.0))
            .rotation_period(Some(200.0))
            // Renewal due at once: less than half of 30 days is left.
            .keyset_validity(30.0 * 86_400.0)
            .trust(trust.clone())
            .build()
            .expect("config"),
        s.open(),
        &registry,
        b.t,
    );
    for dt in [0.0, 15.0, 45.0, 90.0] {
        let _ = writer.refresh_at(b.t + dt).await;
    }
    assert_eq!(
        b.raw().await,
        placed,
        "a restarted server wrote on a restored backup"
    );
    assert_eq!(
        newest.load().await.expect("copy").map(|c| c.generation()),
        good["generation"].as_u64(),
        "the copy still holds the newest write"
    );
    b.restore(&good).await;

    // A KEK holder re-wraps the primary key under a new KEK: an instance whose
    // pins name the new KEK admits it (same key id: the ring does not change);
    // one whose pins do not, refuses it.
    let new_kek = format!("{}://new-kek", PlaintextWrap::SCHEME);
    let widened = TrustPolicy {
        pins: Some(KeysetPins::new(&id, [prefix_of(&kek), new_kek.clone()]).expect("pins")),
        ..trust.clone()
    };
    let repinned = instance(
        SchedulerConfig::builder()
            .timing(Timing::new(10.0, 5.0, 100.0))
            .rotation_period(None)
            .trust(widened)
            .build()
            .expect("config"),
        s.open(),
        &registry,
        b.t,
    );
    repinned.refresh_at(b.t).await.expect("refresh");
    let primary = repinned.status().ring.first().cloned();
    let good = b.current().await;
    let doc = keysets::verified(&*b.store, &registry).await.doc;
    let i = doc
        .keys
        .iter()
        .position(|e| e.kid.map(|k| k.to_hex()) == primary)
        .expect("the primary's entry");
    let e = doc.keys[i].clone();
    let secret = LocalProvider::new()
        .unwrap(
            &e.kek,
            &e.wrapped,
            WrapContext {
                keyset_id: &id,
                entry_id: &e.entry,
            },
        )
        .await
        .expect("the KEK holder unwraps");
    keysets::resealed(&*b.store, &registry, |d| {
        d.keys[i].kek = new_kek.clone();
        d.keys[i].wrapped = secret.expose().to_vec();
    })
    .await;
    b.t += 1.0;
    let st = repinned
        .refresh_at(b.t)
        .await
        .expect("a re-wrap under a pinned KEK is admitted");
    assert_eq!(
        st.ring.first().cloned(),
        primary,
        "the re-wrap changed the key"
    );
    let err = b.sched.refresh_at(b.t).await.expect_err("not pinned here");
    assert_refused(&err, "unpinned_kek");
    b.restore(&good).await;
    let token = b.env.mint_at(&round(), b"after", None, b.t).expect("mint");
    assert!(b.works(b.t, &token));
}
