//! Whether to believe a stored keyset document, checked in the design's order:
//! size cap and envelope (when the store read it), pins, the MAC key's bound
//! unwrap, the tag, the payload, every KEK against the pins, freshness.
//! Admission against the last adopted document follows (`admission`).
//!
//! A document that fails here costs at most one KMS call (the MAC key's
//! unwrap), and none when it names a keyset or a KEK the pins do not allow,
//! or a MAC key reference the KMS refused before.

mod checks;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::admission::Refusal;
use super::mac_keys::MacKeys;
use crate::error::Error;
use crate::keyset::{Keyset, KeysetPins, MAC_PURPOSE, MacKey, MacKeyRef, StoredKeyset};
use crate::provider::{ProviderRegistry, WrapContext};

/// How long a write keeps a document fresh, unless configured: 7 days.
/// Writers renew it when less than half is left.
pub const DEFAULT_KEYSET_VALIDITY: f64 = 7.0 * 86_400.0;

/// What an instance (or the CLI) trusts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrustPolicy {
    /// The keyset id and KEKs the document may use (`None`: unpinned, for
    /// `file://` stores only).
    pub pins: Option<KeysetPins>,
    /// Read `stateseal.keyset/v1` (unauthenticated) documents, with a warning
    /// at every refresh: for the migration window only.
    pub accept_unauthenticated: bool,
    /// Refuse documents below this generation (a restored pre-compromise backup).
    pub min_generation: u64,
}

impl TrustPolicy {
    /// Checks the policy fits the store: a store other than `file://` needs
    /// pins, since whoever writes it could otherwise pick the keys.
    ///
    /// # Errors
    /// [`Error::Config`] naming the missing settings.
    pub fn check_for_store(&self, store_uri: &str) -> Result<(), Error> {
        if self.pins.is_none() && !store_uri.starts_with("file:") {
            return Err(Error::Config(format!(
                "a keyset in {store_uri} needs pins: set keyset_id and keyset_keks (what `stateseal init` printed), so that writing the store is never enough to choose the fleet's keys"
            )));
        }
        Ok(())
    }
}

/// A document that passed every check, with what a writer needs to write the next one.
#[derive(Debug, Clone)]
pub struct VerifiedKeyset {
    /// The content.
    pub doc: Keyset,
    /// When it goes stale (`None` for an accepted unauthenticated document).
    pub expires_at: Option<f64>,
    mac: Option<(MacKeyRef, Arc<MacKey>)>,
}

impl VerifiedKeyset {
    /// Whether the document was authenticated (v2) rather than accepted unauthenticated.
    pub fn is_authenticated(&self) -> bool {
        self.mac.is_some()
    }

    /// Whether a writer should renew it at `now`: less than half of `validity`
    /// left (never for an unauthenticated document, which nothing writes).
    pub fn renewal_due(&self, now: f64, validity: f64) -> bool {
        self.is_authenticated() && self.expires_at.is_some_and(|at| at - now < validity / 2.0)
    }

    /// The KEK the MAC key is wrapped under (authenticated documents).
    pub fn mac_kek(&self) -> Option<&str> {
        self.mac.as_ref().map(|(r, _)| r.kek.as_str())
    }

    /// `next` as a document under the same MAC key, fresh until `expires_at`.
    ///
    /// # Errors
    /// [`Error::Config`] when this document was unauthenticated (upgrade it
    /// first); [`Error::Keyset`] for an invalid `next`.
    pub fn seal_next(&self, next: &Keyset, expires_at: f64) -> Result<StoredKeyset, Error> {
        let (r, key) = self.mac.as_ref().ok_or_else(|| {
            Error::Config(
                "the keyset is unauthenticated (stateseal.keyset/v1); nothing writes it until \
                 `stateseal keyset upgrade` has converted it"
                    .into(),
            )
        })?;
        StoredKeyset::seal(next, expires_at, r, key)
    }
}

/// `doc` as a new authenticated document under a fresh MAC key generated with
/// `kek` (one KMS call): `stateseal init` and `stateseal keyset upgrade`.
///
/// # Errors
/// Provider errors; [`Error::Keyset`] for an invalid `doc` (every entry needs its key id).
pub async fn seal_with_new_mac_key(
    registry: &ProviderRegistry,
    doc: &Keyset,
    kek: &str,
    expires_at: f64,
) -> Result<(StoredKeyset, VerifiedKeyset), Error> {
    let provider = registry.provider_for(kek)?;
    let ctx = WrapContext {
        keyset_id: &doc.id,
        entry_id: MAC_PURPOSE,
    };
    let dk = provider.generate(kek, ctx).await?;
    let key = Arc::new(MacKey::from_secret(&dk.plaintext)?);
    let r = MacKeyRef {
        kek: kek.to_owned(),
        wrapped: dk.wrapped,
    };
    let stored = StoredKeyset::seal(doc, expires_at, &r, &key)?;
    let verified = VerifiedKeyset {
        doc: doc.clone(),
        expires_at: Some(expires_at),
        mac: Some((r, key)),
    };
    Ok((stored, verified))
}

/// Verifies stored documents under a [`TrustPolicy`], keeping the MAC keys it
/// unwrapped and, for a while, the MAC key references the KMS refused.
pub struct KeysetTrust {
    policy: TrustPolicy,
    mac_keys: MacKeys,
    kms_calls: AtomicU64,
}

impl std::fmt::Debug for KeysetTrust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeysetTrust")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

fn refuse(store: &str, reason: Refusal, detail: String) -> Error {
    reason.record(store, detail)
}

impl KeysetTrust {
    /// A verifier for `policy`.
    pub fn new(policy: TrustPolicy) -> Self {
        Self {
            policy,
            mac_keys: MacKeys::default(),
            kms_calls: AtomicU64::new(0),
        }
    }

    /// The policy in force.
    pub fn policy(&self) -> &TrustPolicy {
        &self.policy
    }

    /// KMS calls made to unwrap MAC keys.
    pub fn kms_calls(&self) -> u64 {
        self.kms_calls.load(Ordering::Relaxed)
    }

    /// Checks `stored` (read from store `uri`) at `now`; every refusal is
    /// counted in `stateseal_keyset_rejected_total{reason}` and logged.
    ///
    /// # Errors
    /// [`Error::KeysetRefused`] naming the reason; provider errors when the MAC
    /// key cannot be unwrapped for a reason that is not the document's (an
    /// outage, a denied KEK).
    pub async fn open(
        &self,
        registry: &ProviderRegistry,
        uri: &str,
        stored: &StoredKeyset,
        now: f64,
    ) -> Result<VerifiedKeyset, Error> {
        self.open_inner(registry, uri, stored, Some(now)).await
    }

    /// [`KeysetTrust::open`] without the freshness check: for an operator who
    /// renews or inspects a stale document. Every other check holds.
    ///
    /// # Errors
    /// As [`KeysetTrust::open`], but never refused as `expired`.
    pub async fn open_ignoring_expiry(
        &self,
        registry: &ProviderRegistry,
        uri: &str,
        stored: &StoredKeyset,
    ) -> Result<VerifiedKeyset, Error> {
        self.open_inner(registry, uri, stored, None).await
    }

    /// Whether `verified`, opened earlier, is still fresh at `now` (what a
    /// conditional read that finds the document unchanged still has to ask).
    ///
    /// # Errors
    /// [`Error::KeysetRefused`] (`expired`) past its `expires_at`.
    pub fn check_fresh(uri: &str, verified: &VerifiedKeyset, now: f64) -> Result<(), Error> {
        match verified.expires_at {
            Some(expires_at) if now >= expires_at => Err(refuse(
                uri,
                Refusal::Expired,
                format!(
                    "generation {} went stale {:.0}s ago; a writer with the KEK renews it (`stateseal rotate`, `stateseal keyset renew`, or a server that may write)",
                    verified.doc.generation,
                    now - expires_at
                ),
            )),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
                    created_at: NOW,
                    activate_at: NOW,
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
        ) -> (Option<&'static str>, u64) {
            let before = self.unwraps();
            let got = KeysetTrust::new(policy)
                .open(&self.registry, "file:///test", stored, now)
                .await;
            let reason = match got {
                Ok(_) => None,
                Err(Error::KeysetRefused { reason, .. }) => Some(reason),
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
        let (stored, _) = seal_with_new_mac_key(&kit.registry, &doc, &kit.kek, NOW + 100.0)
            .await
            .unwrap();
        assert!(stored.is_authenticated());
        let trust = KeysetTrust::new(kit.pins("ks_fleet"));
        let v = trust
            .open(&kit.registry, "file:///t", &stored, NOW)
            .await
            .unwrap();
        assert_eq!(
            (v.doc.clone(), v.expires_at),
            (doc.clone(), Some(NOW + 100.0))
        );
        // The next write is tagged under the same MAC key: no new KMS call to read it.
        let mut next = doc.clone();
        next.generation = 4;
        let written = v.seal_next(&next, NOW + 200.0).unwrap();
        let calls = trust.kms_calls();
        let again = trust
            .open(&kit.registry, "file:///t", &written, NOW)
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
        let (stored, _) = seal_with_new_mac_key(&kit.registry, &doc, &kit.kek, NOW + 100.0)
            .await
            .unwrap();
        let pinned = || kit.pins("ks_fleet");

        // (a) A whole document of the writer's own, MAC key and data key under their KEK
        // (`…/p10/`, which a `…/p1/` prefix pin must not match): one refusal, no KMS call.
        let own = kit.doc("ks_fleet", &kit.attacker_kek).await;
        let (forged, _) =
            seal_with_new_mac_key(&kit.registry, &own, &kit.attacker_kek, NOW + 100.0)
                .await
                .unwrap();
        assert_eq!(
            kit.reason(pinned(), &forged, NOW).await,
            (Some("unpinned_kek"), 0)
        );

        // The payload changed by one byte, or re-spelled with the same values: the tag covers bytes.
        let flipped = edited(&stored, |v| {
            let mut p = payload_of(v);
            let at = p.iter().position(|&b| b == b'3').unwrap(); // the generation's digit
            p[at] = b'4';
            set_payload(v, &p);
            v["generation"] = 4.into();
        });
        assert_eq!(kit.reason(pinned(), &flipped, NOW).await.0, Some("mac"));
        let respelled = edited(&stored, |v| {
            let p: serde_json::Value = serde_json::from_slice(&payload_of(v)).unwrap();
            set_payload(v, &serde_json::to_vec(&p).unwrap());
        });
        assert_eq!(kit.reason(pinned(), &respelled, NOW).await.0, Some("mac"));
        // A truncated entry list, re-tagged with nothing: the tag fails.
        let truncated = edited(&stored, |v| {
            let mut p: serde_json::Value = serde_json::from_slice(&payload_of(v)).unwrap();
            p["keys"][0].as_object_mut().unwrap().remove("retire_at");
            set_payload(v, &serde_json::to_vec_pretty(&p).unwrap());
        });
        assert_eq!(kit.reason(pinned(), &truncated, NOW).await.0, Some("mac"));

        // A tag from another keyset under the same KEK: that keyset's MAC key does not
        // unwrap for this keyset id (the wrap is bound to it).
        let other = kit.doc("ks_other", &kit.kek).await;
        let (theirs, _) = seal_with_new_mac_key(&kit.registry, &other, &kit.kek, NOW + 100.0)
            .await
            .unwrap();
        let transplanted = edited(&stored, |v| {
            let t: serde_json::Value = serde_json::from_slice(theirs.bytes()).unwrap();
            v["mac"] = t["mac"].clone();
        });
        assert_eq!(
            kit.reason(pinned(), &transplanted, NOW).await.0,
            Some("mac")
        );
        // Another keyset's whole valid document: refused by the id pin, no KMS call.
        assert_eq!(
            kit.reason(pinned(), &theirs, NOW).await,
            (Some("other_keyset"), 0)
        );
        // Its clear id rewritten to ours: the MAC key is unwrapped for *our* id and fails.
        let renamed = edited(&theirs, |v| v["id"] = "ks_fleet".into());
        assert_eq!(kit.reason(pinned(), &renamed, NOW).await.0, Some("mac"));

        // The MAC key moved under an unpinned KEK: one refusal, zero KMS calls.
        let moved = edited(&stored, |v| {
            let f: serde_json::Value = serde_json::from_slice(forged.bytes()).unwrap();
            v["mac"]["kek"] = f["mac"]["kek"].clone();
        });
        assert_eq!(
            kit.reason(pinned(), &moved, NOW).await,
            (Some("unpinned_kek"), 0)
        );

        // Unauthenticated documents: refused unless accepted for a migration.
        let legacy = StoredKeyset::unauthenticated(&doc).unwrap();
        assert_eq!(
            kit.reason(pinned(), &legacy, NOW).await,
            (Some("unauthenticated"), 0)
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
        let (stored, _) = seal_with_new_mac_key(&kit.registry, &doc, &kit.kek, NOW + 100.0)
            .await
            .unwrap();
        assert_eq!(
            kit.reason(kit.pins("ks_fleet"), &stored, NOW).await.0,
            Some("unpinned_kek")
        );
        doc.keys.pop();
        let (stored, _) = seal_with_new_mac_key(&kit.registry, &doc, &kit.kek, NOW + 100.0)
            .await
            .unwrap();
        // Past expires_at: stale.
        assert_eq!(
            kit.reason(kit.pins("ks_fleet"), &stored, NOW + 100.0)
                .await
                .0,
            Some("expired")
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
            (Some("below_min_generation"), 0)
        );
    }
}
