//! Keyset documents as tests need them: the fixtures the contract suites
//! share (`stateseal_contract::keysets`: verified content, pins, KEK-holder
//! edits), and a few more for the project's own tests.

use stateseal::{Keyset, KeysetStore, ProviderRegistry};
pub use stateseal_contract::keysets::{FAR_FUTURE, pins_of, resealed, stored, verified};

/// The store's verified content.
pub async fn content(store: &dyn KeysetStore, registry: &ProviderRegistry) -> Keyset {
    verified(store, registry).await.doc
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
