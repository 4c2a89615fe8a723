//! Keyset documents as the suites read and write them: the stored document,
//! its verified content, the pins an operator would configure for it, and
//! edits written the way a KEK holder writes them (tagged under the
//! document's own MAC key).
//!
//! ```
//! # let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
//! # rt.block_on(async {
//! use stateseal::rotation::{Timing, init_keyset};
//! use stateseal::{FileStore, KeysetStore, LocalProvider, ProviderRegistry, UnixTime};
//! use stateseal_contract::keysets;
//!
//! let dir = std::env::temp_dir().join(format!("keysets-doc-{}", std::process::id()));
//! # let _ = std::fs::remove_dir_all(&dir);
//! std::fs::create_dir_all(&dir).unwrap();
//! LocalProvider::create_kek(&dir.join("kek.bin")).unwrap();
//! let kek = format!("local://{}", dir.join("kek.bin").display());
//! let mut registry = ProviderRegistry::with_defaults();
//! registry.allow_local_kek();
//! let store = FileStore::new(dir.join("keyset.json"));
//! init_keyset(&store, &registry, &kek, Timing::default(), UnixTime::from_secs(1_782_345_600)).await.unwrap();
//!
//! let written = keysets::resealed(&store, &registry, |doc| doc.keys[0].seals_reserved += 1).await;
//! assert_eq!(keysets::verified(&store, &registry).await.doc, written);
//! # let _ = std::fs::remove_dir_all(&dir);
//! # });
//! ```

use stateseal::keyset::KeysetPins;
use stateseal::rotation::{KeysetTrust, TrustPolicy, VerifiedKeyset};
use stateseal::{Keyset, KeysetStore, ProviderRegistry, StoredKeyset};

/// An `expires_at` no test reaches (9999-12-31).
pub const FAR_FUTURE: stateseal::UnixTime = stateseal::UnixTime::from_secs(253_402_214_400);

/// The stored document.
///
/// # Panics
/// When the store fails or holds no keyset.
pub async fn stored(store: &dyn KeysetStore) -> StoredKeyset {
    store
        .load()
        .await
        .expect("load")
        .expect("the store holds a keyset")
}

/// The store's document, verified (tag and MAC key; nothing pinned, freshness not checked).
///
/// # Panics
/// When there is no document or it does not verify.
pub async fn verified(store: &dyn KeysetStore, registry: &ProviderRegistry) -> VerifiedKeyset {
    KeysetTrust::new(TrustPolicy::default())
        .open_ignoring_expiry(registry, store.uri(), &stored(store).await)
        .await
        .expect("the stored keyset verifies")
}

/// What `stateseal init` tells operators to pin for the store's keyset: its
/// id and every KEK it uses (the MAC key's included).
///
/// # Panics
/// As [`verified`].
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

/// Writes the next generation with `edit` applied, as a KEK holder would
/// (an operator's tool, a restore procedure), fresh until [`FAR_FUTURE`].
/// Returns what was written.
///
/// # Panics
/// As [`verified`], or when the write fails.
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
