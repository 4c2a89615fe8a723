use super::*;
use crate::error::{KeysetError, KeysetRefusal};
use crate::keyset::{KeyEntry, Timing};
use crate::provider::{BoxFuture, DataKey, KeyProvider, LocalProvider};
use crate::secret::Secret;

/// The local provider, counting unwraps: "zero KMS calls" must be measured.
#[derive(Debug, Default)]
struct Counting {
    inner: LocalProvider,
    unwraps: AtomicU64,
}

impl KeyProvider for Counting {
    fn scheme(&self) -> &'static str {
        "local"
    }
    fn generate<'a>(
        &'a self,
        kek: &'a str,
        ctx: WrapContext<'a>,
    ) -> BoxFuture<'a, Result<DataKey, Error>> {
        self.inner.generate(kek, ctx)
    }
    fn unwrap<'a>(
        &'a self,
        kek: &'a str,
        wrapped: &'a [u8],
        ctx: WrapContext<'a>,
    ) -> BoxFuture<'a, Result<Secret, Error>> {
        self.unwraps.fetch_add(1, Ordering::SeqCst);
        self.inner.unwrap(kek, wrapped, ctx)
    }
}

struct Kit {
    dir: std::path::PathBuf,
    registry: ProviderRegistry,
    counting: Arc<Counting>,
    kek: String,
    attacker_kek: String,
}

const NOW: f64 = 1_782_345_600.0;

impl Kit {
    /// `doc` under a fresh MAC key wrapped with `kek`, fresh until NOW + 100 s.
    async fn sealed(&self, doc: &Keyset, kek: &str) -> (StoredKeyset, VerifiedKeyset) {
        seal_with_new_mac_key(&self.registry, doc, kek, at(NOW + 100.0))
            .await
            .unwrap()
    }

    fn new(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("stateseal-trust-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("fleet/p1")).unwrap();
        std::fs::create_dir_all(dir.join("fleet/p10")).unwrap();
        LocalProvider::create_kek(dir.join("fleet/p1/kek")).unwrap();
        LocalProvider::create_kek(dir.join("fleet/p10/kek")).unwrap();
        let counting = Arc::new(Counting::default());
        let mut registry = ProviderRegistry::with_defaults();
        registry.register_provider(counting.clone());
        Self {
            kek: format!("local://{}", dir.join("fleet/p1/kek").display()),
            attacker_kek: format!("local://{}", dir.join("fleet/p10/kek").display()),
            dir,
            registry,
            counting,
        }
    }

    fn pins(&self, id: &str) -> TrustPolicy {
        TrustPolicy {
            pins: Some(
                KeysetPins::new(
                    id,
                    [format!("local://{}/", self.dir.join("fleet/p1").display())],
                )
                .unwrap(),
            ),
            ..TrustPolicy::default()
        }
    }

    /// A one-key document of keyset `id` whose key is wrapped under `kek`.
    async fn doc(&self, id: &str, kek: &str) -> Keyset {
        let provider = self.registry.provider_for(kek).unwrap();
        let ctx = WrapContext {
            keyset_id: id,
            entry_id: "k_1",
        };
        let dk = provider.generate(kek, ctx).await.unwrap();
        Keyset {
            id: id.into(),
            generation: 3,
            timing: Some(Timing::default()),
            rotation_claim: None,
            revocations: Vec::new(),
            keys: vec![KeyEntry {
                entry: "k_1".into(),
                kid: Some(crate::key::KeyId::of(&dk.plaintext)),
                alg: crate::key::TokenFormat::V1,
                kek: kek.into(),
                wrapped: dk.wrapped,
                created_at: UnixTime::from_finite_secs(NOW),
                activate_at: UnixTime::from_finite_secs(NOW),
                retire_at: None,
                seals_reserved: 0,
            }],
        }
    }

    fn unwraps(&self) -> u64 {
        self.counting.unwraps.load(Ordering::SeqCst)
    }

    /// Opens `stored` under `policy`: the refusal's reason, and the unwraps it cost.
    async fn reason(
        &self,
        policy: TrustPolicy,
        stored: &StoredKeyset,
        now: f64,
    ) -> (Option<KeysetRefusal>, u64) {
        let before = self.unwraps();
        let got = KeysetTrust::new(policy)
            .open(&self.registry, "file:///test", stored, at(now))
            .await;
        let reason = match got {
            Ok(_) => None,
            Err(Error::Keyset(KeysetError::Refused { reason, .. })) => Some(reason),
            Err(e) => panic!("not a refusal: {e}"),
        };
        (reason, self.unwraps() - before)
    }
}

impl Drop for Kit {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The envelope of `stored` with `edit` applied to its JSON.
fn edited(stored: &StoredKeyset, edit: impl Fn(&mut serde_json::Value)) -> StoredKeyset {
    let mut v: serde_json::Value = serde_json::from_slice(stored.bytes()).unwrap();
    edit(&mut v);
    StoredKeyset::from_bytes(&serde_json::to_vec(&v).unwrap()).unwrap()
}

fn payload_of(v: &serde_json::Value) -> Vec<u8> {
    base64_turbo::STANDARD
        .decode(v["payload"].as_str().unwrap())
        .unwrap()
}

fn set_payload(v: &mut serde_json::Value, bytes: &[u8]) {
    v["payload"] = base64_turbo::STANDARD.encode(bytes).into();
}

#[tokio::test(flavor = "current_thread")]
async fn an_authentic_document_opens_and_writes_keep_its_mac_key() {
    let kit = Kit::new("ok");
    let doc = kit.doc("ks_fleet", &kit.kek).await;
    let (stored, _) = kit.sealed(&doc, &kit.kek).await;
    assert!(stored.is_authenticated());
    let trust = KeysetTrust::new(kit.pins("ks_fleet"));
    let v = trust
        .open(&kit.registry, "file:///t", &stored, at(NOW))
        .await
        .unwrap();
    assert_eq!(
        (v.doc.clone(), v.expires_at),
        (doc.clone(), Some(at(NOW + 100.0)))
    );
    // The next write is tagged under the same MAC key: no new KMS call to read it.
    let mut next = doc.clone();
    next.generation = 4;
    let written = v.seal_next(&next, at(NOW + 200.0)).unwrap();
    let calls = trust.kms_calls();
    let again = trust
        .open(&kit.registry, "file:///t", &written, at(NOW))
        .await
        .unwrap();
    assert_eq!((again.doc, trust.kms_calls()), (next, calls));
    // Unpinned readers (file:// only) bind the MAC key to the document's own id.
    let (reason, _) = kit.reason(TrustPolicy::default(), &stored, NOW).await;
    assert_eq!(reason, None);
}

#[tokio::test(flavor = "current_thread")]
async fn a_store_writer_without_the_kek_changes_nothing() {
    let kit = Kit::new("writer");
    let doc = kit.doc("ks_fleet", &kit.kek).await;
    let (stored, _) = kit.sealed(&doc, &kit.kek).await;
    let pinned = || kit.pins("ks_fleet");

    // (a) A whole document of the writer's own, MAC key and data key under their KEK
    // (`…/p10/`, which a `…/p1/` prefix pin must not match): one refusal, no KMS call.
    let own = kit.doc("ks_fleet", &kit.attacker_kek).await;
    let (forged, _) = kit.sealed(&own, &kit.attacker_kek).await;
    assert_eq!(
        kit.reason(pinned(), &forged, NOW).await,
        (Some(KeysetRefusal::UnpinnedKek), 0)
    );

    // The payload changed by one byte, or re-spelled with the same values: the tag covers bytes.
    let flipped = edited(&stored, |v| {
        let mut p = payload_of(v);
        let at = p.iter().position(|&b| b == b'3').unwrap(); // the generation's digit
        p[at] = b'4';
        set_payload(v, &p);
        v["generation"] = 4.into();
    });
    assert_eq!(
        kit.reason(pinned(), &flipped, NOW).await.0,
        Some(KeysetRefusal::Mac)
    );
    let respelled = edited(&stored, |v| {
        let p: serde_json::Value = serde_json::from_slice(&payload_of(v)).unwrap();
        set_payload(v, &serde_json::to_vec(&p).unwrap());
    });
    assert_eq!(
        kit.reason(pinned(), &respelled, NOW).await.0,
        Some(KeysetRefusal::Mac)
    );
    // A truncated entry list, re-tagged with nothing: the tag fails.
    let truncated = edited(&stored, |v| {
        let mut p: serde_json::Value = serde_json::from_slice(&payload_of(v)).unwrap();
        p["keys"][0].as_object_mut().unwrap().remove("retire_at");
        set_payload(v, &serde_json::to_vec_pretty(&p).unwrap());
    });
    assert_eq!(
        kit.reason(pinned(), &truncated, NOW).await.0,
        Some(KeysetRefusal::Mac)
    );

    // A tag from another keyset under the same KEK: that keyset's MAC key does not
    // unwrap for this keyset id (the wrap is bound to it).
    let other = kit.doc("ks_other", &kit.kek).await;
    let (theirs, _) = kit.sealed(&other, &kit.kek).await;
    let transplanted = edited(&stored, |v| {
        let t: serde_json::Value = serde_json::from_slice(theirs.bytes()).unwrap();
        v["mac"] = t["mac"].clone();
    });
    assert_eq!(
        kit.reason(pinned(), &transplanted, NOW).await.0,
        Some(KeysetRefusal::Mac)
    );
    // Another keyset's whole valid document: refused by the id pin, no KMS call.
    assert_eq!(
        kit.reason(pinned(), &theirs, NOW).await,
        (Some(KeysetRefusal::OtherKeyset), 0)
    );
    // Its clear id rewritten to ours: the MAC key is unwrapped for *our* id and fails.
    let renamed = edited(&theirs, |v| v["id"] = "ks_fleet".into());
    assert_eq!(
        kit.reason(pinned(), &renamed, NOW).await.0,
        Some(KeysetRefusal::Mac)
    );

    // The MAC key moved under an unpinned KEK: one refusal, zero KMS calls.
    let moved = edited(&stored, |v| {
        let f: serde_json::Value = serde_json::from_slice(forged.bytes()).unwrap();
        v["mac"]["kek"] = f["mac"]["kek"].clone();
    });
    assert_eq!(
        kit.reason(pinned(), &moved, NOW).await,
        (Some(KeysetRefusal::UnpinnedKek), 0)
    );

    // Unauthenticated documents: refused unless accepted for a migration.
    let legacy = StoredKeyset::unauthenticated(&doc).unwrap();
    assert_eq!(
        kit.reason(pinned(), &legacy, NOW).await,
        (Some(KeysetRefusal::Unauthenticated), 0)
    );
    let migrating = TrustPolicy {
        accept_unauthenticated: true,
        ..pinned()
    };
    assert_eq!(kit.reason(migrating, &legacy, NOW).await.0, None);
}

#[tokio::test(flavor = "current_thread")]
async fn authentic_but_old_foreign_keked_or_stale_documents_are_refused() {
    let kit = Kit::new("old");
    let mut doc = kit.doc("ks_fleet", &kit.kek).await;
    // A KEK holder's document naming an unpinned KEK for a data key.
    let foreign = kit.doc("ks_fleet", &kit.attacker_kek).await;
    doc.keys.push(KeyEntry {
        entry: "k_2".into(),
        ..foreign.keys[0].clone()
    });
    let (stored, _) = kit.sealed(&doc, &kit.kek).await;
    assert_eq!(
        kit.reason(kit.pins("ks_fleet"), &stored, NOW).await.0,
        Some(KeysetRefusal::UnpinnedKek)
    );
    doc.keys.pop();
    let (stored, _) = kit.sealed(&doc, &kit.kek).await;
    // Past expires_at: stale.
    assert_eq!(
        kit.reason(kit.pins("ks_fleet"), &stored, NOW + 100.0)
            .await
            .0,
        Some(KeysetRefusal::Expired)
    );
    assert_eq!(
        kit.reason(kit.pins("ks_fleet"), &stored, NOW + 99.0)
            .await
            .0,
        None
    );
    // Below the configured minimum generation (3 here): refused before any KMS call.
    let raised = TrustPolicy {
        min_generation: 4,
        ..kit.pins("ks_fleet")
    };
    assert_eq!(
        kit.reason(raised, &stored, NOW).await,
        (Some(KeysetRefusal::BelowMinimum), 0)
    );
}

/// The test's seconds as an instant.
fn at(t: f64) -> crate::clock::UnixTime {
    crate::clock::UnixTime::from_finite_secs(t)
}
