//! Keyset documents as tests need them: verified content, the pins a server
//! would be configured with, and edits written the way a KEK holder writes
//! them (tagged under the document's own MAC key).

use stateseal::keyset::KeysetPins;
use stateseal::rotation::{KeysetTrust, TrustPolicy, VerifiedKeyset};
use stateseal::{Keyset, KeysetStore, ProviderRegistry, StoredKeyset};

/// An `expires_at` no test reaches (9999-12-31).
pub const FAR_FUTURE: f64 = 253_402_214_400.0;

/// The stored document (panics when there is none).
pub async fn stored(store: &dyn KeysetStore) -> StoredKeyset {
    store
        .load()
        .await
        .expect("load")
        .expect("the store holds a keyset")
}

/// The store's document, verified (tag and MAC key; nothing pinned, freshness not checked).
pub async fn verified(store: &dyn KeysetStore, registry: &ProviderRegistry) -> VerifiedKeyset {
    KeysetTrust::new(TrustPolicy::default())
        .open_ignoring_expiry(registry, store.uri(), &stored(store).await)
        .await
        .expect("the stored keyset verifies")
}

/// The store's verified content.
pub async fn content(store: &dyn KeysetStore, registry: &ProviderRegistry) -> Keyset {
    verified(store, registry).await.doc
}

/// What `stateseal init` tells operators to pin for the store's keyset: its
/// id and every KEK it uses (the MAC key's included).
pub async fn pins_of(store: &dyn KeysetStore, registry: &ProviderRegistry) -> TrustPolicy {
    let v = verified(store, registry).await;
    let mut keks: Vec<String> = v.doc.keys.iter().map(|e| e.kek.clone()).collect();
    keks.extend(v.mac_kek().map(str::to_owned));
    keks.sort();
    keks.dedup();
    TrustPolicy {
        pins: Some(KeysetPins::new(&v.doc.id, keks).expect("pins")),
        ..TrustPolicy::default()
    }
}

/// The `STATESEAL_KEYSET_ID` and `STATESEAL_KEYSET_KEKS` a CLI or server
/// process is given for the store's keyset.
pub async fn pin_vars(
    store: &dyn KeysetStore,
    registry: &ProviderRegistry,
) -> Vec<(&'static str, String)> {
    let v = verified(store, registry).await;
    let mut keks: Vec<String> = v.doc.keys.iter().map(|e| e.kek.clone()).collect();
    keks.extend(v.mac_kek().map(str::to_owned));
    keks.sort();
    keks.dedup();
    vec![
        ("STATESEAL_KEYSET_ID", v.doc.id.clone()),
        ("STATESEAL_KEYSET_KEKS", keks.join(",")),
    ]
}

/// Writes the next generation with `edit` applied, as a KEK holder would
/// (an operator's tool, a restore procedure), fresh until [`FAR_FUTURE`].
/// Returns what was written.
pub async fn resealed(
    store: &dyn KeysetStore,
    registry: &ProviderRegistry,
    edit: impl FnOnce(&mut Keyset),
) -> Keyset {
    let v = verified(store, registry).await;
    let mut next = v.doc.clone();
    edit(&mut next);
    next.generation = v.doc.generation + 1;
    let sealed = v.seal_next(&next, FAR_FUTURE).expect("seal");
    store
        .compare_and_swap(Some(v.doc.generation), &sealed)
        .await
        .expect("write");
    next
}

/// Raw JSON of the stored envelope, for edits a writer without the KEK makes.
pub async fn envelope(store: &dyn KeysetStore) -> serde_json::Value {
    serde_json::from_slice(stored(store).await.bytes()).expect("json")
}

/// `doc` as a release before `v2.` tokens wrote it: every key a `v1.`
/// (AES-256-GCM, budgeted) key, its v1 key id recorded. Each entry is
/// unwrapped through `registry` for its id.
pub async fn v1_keys(doc: &Keyset, registry: &ProviderRegistry) -> Keyset {
    let mut old = doc.clone();
    for e in &mut old.keys {
        let (secret, _) = stateseal::rotation::unwrap_entry(doc, e, registry)
            .await
            .expect("unwrap");
        e.alg = stateseal::TokenFormat::V1;
        e.kid = Some(stateseal::KeyId::of(&secret));
    }
    old
}

/// Rewrites the store's keyset with [`v1_keys`] as the next generation, as a
/// KEK holder would: a keyset whose keys were written before `v2.` tokens
/// (rotations then add `v2.` keys). Returns what was written.
pub async fn with_v1_keys(store: &dyn KeysetStore, registry: &ProviderRegistry) -> Keyset {
    let v = verified(store, registry).await;
    let old = v1_keys(&v.doc, registry).await;
    resealed(store, registry, |d| d.keys = old.keys).await
}
