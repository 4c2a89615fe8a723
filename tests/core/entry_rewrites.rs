//! A keyset's entries rewritten under a running ring: a re-wrapped entry is
//! unwrapped again, and only to the key it held; a document holding one key
//! twice is refused.

use std::sync::Arc;

use stateseal::rotation::seal_with_new_mac_key;
use stateseal::{
    Error, FileStore, KeyEntry, KeyRing, Keyset, KeysetError, KeysetRefusal, KeysetStore,
    ProviderRegistry,
};
use stateseal_contract::integrity::PlaintextWrap;
use stateseal_testkit::instant;
use stateseal_testkit::keysets;

use crate::fleet::temp_dir;
use crate::store_faults::{T0, instance};

fn entry(id: &str, key: u8, activate_at: f64) -> KeyEntry {
    KeyEntry {
        kid: Some(
            KeyRing::from_bytes(vec![vec![key; 32]])
                .expect("ring")
                .kids()[0],
        ),
        alg: stateseal::TokenFormat::V1,
        entry: id.into(),
        kek: format!("{}://k", PlaintextWrap::SCHEME),
        wrapped: vec![key; 32],
        created_at: stateseal_testkit::instant(activate_at),
        activate_at: stateseal_testkit::instant(activate_at),
        retire_at: None,
        seals_reserved: 0,
    }
}

fn kid_of(key: u8) -> String {
    KeyRing::from_bytes(vec![vec![key; 32]])
        .expect("ring")
        .kids()[0]
        .to_hex()
}

async fn transparent_store(
    tag: &str,
) -> (std::path::PathBuf, Arc<dyn KeysetStore>, ProviderRegistry) {
    let mut registry = ProviderRegistry::with_defaults();
    registry.register_provider(Arc::new(PlaintextWrap));
    let dir = temp_dir(tag);
    let store: Arc<dyn KeysetStore> = Arc::new(FileStore::new(dir.join("keyset.json")));
    let doc = Keyset {
        timing: None,
        rotation_claim: None,
        revocations: Vec::new(),
        id: "ks_transparent".into(),
        generation: 1,
        keys: vec![entry("k_a", 1, T0)],
    };
    let (stored, _) = seal_with_new_mac_key(
        &registry,
        &doc,
        &format!("{}://k", PlaintextWrap::SCHEME),
        keysets::FAR_FUTURE,
    )
    .await
    .expect("seal");
    store.compare_and_swap(None, &stored).await.expect("create");
    (dir, store, registry)
}

/// Writes `keys` as the next generation, tagged as a KEK holder would.
async fn write_keys(store: &dyn KeysetStore, registry: &ProviderRegistry, keys: Vec<KeyEntry>) {
    keysets::resealed(store, registry, |d| d.keys = keys).await;
}

#[tokio::test]
async fn a_rewrapped_entry_is_unwrapped_again_only_to_the_same_key() {
    let (dir, store, registry) = transparent_store("faults-rewrap").await;
    let a = instance(store.clone(), &registry);
    a.sched.refresh_at(instant(T0)).await.expect("refresh");
    assert_eq!(a.primary(), Some(kid_of(1)));
    let calls = a.sched.kms_calls();
    // The same entry and key, wrapped differently (re-wrapped under a new KEK, or repaired).
    let mut rewrapped = entry("k_a", 1, T0);
    rewrapped.wrapped.extend_from_slice(b"salt");
    write_keys(&*store, &registry, vec![rewrapped]).await;
    a.sched
        .refresh_at(instant(T0 + 1.0))
        .await
        .expect("refresh");
    assert!(a.sched.kms_calls() > calls, "the new wrap was unwrapped");
    assert_eq!(a.primary(), Some(kid_of(1)));
    assert_eq!(a.sched.status().generation, Some(2));
    // "Re-wrapped" to another key under the recorded key id: refused, nothing changes.
    let mut swapped = entry("k_a", 1, T0);
    swapped.wrapped = vec![2; 32];
    write_keys(&*store, &registry, vec![swapped]).await;
    let err = a.sched.refresh_at(instant(T0 + 2.0)).await.unwrap_err();
    assert!(
        matches!(
            &err,
            Error::Keyset(KeysetError::Refused {
                reason: KeysetRefusal::KeyChanged,
                ..
            })
        ),
        "{err}"
    );
    assert_eq!(a.primary(), Some(kid_of(1)));
    assert_eq!(a.sched.status().generation, Some(2));
    assert!(a.sched.is_ready());
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_document_with_a_duplicate_key_is_refused() {
    let (dir, store, registry) = transparent_store("faults-dup").await;
    let a = instance(store.clone(), &registry);
    a.sched.refresh_at(instant(T0)).await.expect("refresh");
    write_keys(
        &*store,
        &registry,
        vec![entry("k_a", 1, T0), entry("k_b", 1, T0 + 1.0)],
    )
    .await;
    let err = a.sched.refresh_at(instant(T0 + 2.0)).await.unwrap_err();
    assert!(
        matches!(
            &err,
            Error::Keyset(KeysetError::Refused {
                reason: KeysetRefusal::DuplicateKey,
                ..
            })
        ),
        "{err}"
    );
    assert_eq!(a.kids(), vec![kid_of(1)]);
    assert_eq!(a.sched.status().generation, Some(1));
    assert!(a.sched.is_ready());
    let _ = std::fs::remove_dir_all(dir);
}
