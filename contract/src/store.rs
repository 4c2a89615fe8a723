//! The behaviour every [`KeysetStore`] must show, run by each backend's own
//! tests against a real (or contract-double) service:
//!
//! - an empty store loads as `None`; the first write is create-if-absent;
//! - every write is compare-and-swap on the generation: of many truly
//!   concurrent writers based on the same generation exactly one wins, and
//!   the others get [`KeysetError::Conflict`] and change nothing;
//! - a write whose generation is not above the expected one is refused;
//! - a document loads back exactly as written (its payload bytes and tag);
//! - a document over the size cap is refused after one bounded read, and an
//!   unauthenticated (v1) one loads as such (refusing it is the trust's job);
//! - bytes that are not a keyset load as [`KeysetError::Invalid`] (never as `None`,
//!   never adopted), and an older document is returned as it is (refusing it
//!   is the scheduler's job, so the store must not hide it);
//! - an outage is an error, never `None` (which would mean "no keyset"), and
//!   the store works again once the service is back;
//! - a handle without permission gets an error on both load and write;
//! - a conditional read naming the version of the document in place answers
//!   `Unchanged` (from any handle); after any write it returns the new
//!   document, and a version the store never gave, an outage or a denied
//!   handle never count as `Unchanged`. A store that names no versions skips
//!   these cases and says so.

use std::sync::Arc;
use std::time::Duration;

use stateseal::keyset::{ConditionalLoad, MAX_DOCUMENT_BYTES, MacKey, MacKeyRef, StoreVersion};
use stateseal::rotation::Timing;
use stateseal::{
    Error, KeyEntry, KeyId, Keyset, KeysetError, KeysetStore, ProviderError, Secret, StoredKeyset,
};

/// A backend under test, with the service-side powers the contract needs.
pub trait StoreUnderTest: Send + Sync {
    /// A new handle on the same, initially empty, location (each call a new client).
    fn open(&self) -> Arc<dyn KeysetStore>;
    /// Puts a JSON document in place as an operator or a restore would,
    /// bypassing compare-and-swap.
    fn put_raw(&self, json: &serde_json::Value);
    /// Makes the service unreachable.
    fn break_service(&self);
    /// Brings it back.
    fn repair_service(&self);
    /// A handle whose credentials may neither read nor write the location, or
    /// why the service under test cannot refuse one (the case is then not run,
    /// and the run says so).
    fn denied(&self) -> Result<Arc<dyn KeysetStore>, &'static str>;
    /// Whether the service accepts an object larger than the keyset size cap
    /// (`Err`: why not; the oversized cases are then not run, and the run says so).
    fn holds_oversized(&self) -> Result<(), &'static str> {
        Ok(())
    }
}

/// How many writers race in the concurrency case.
const WRITERS: usize = 8;

/// A valid document of `generation` whose single entry is named `entry`,
/// tagged under a fixed MAC key (stores never verify; `KeysetTrust` does).
///
/// # Panics
/// Never for the generations and entry names a test uses.
pub fn document(generation: u64, entry: &str) -> StoredKeyset {
    let mac = MacKey::from_secret(&Secret::new(vec![0x5a; 32]).expect("secret")).expect("mac key");
    let r = MacKeyRef {
        kek: "local:///contract/kek".into(),
        wrapped: vec![9; 60],
    };
    StoredKeyset::seal(
        &content(generation, entry),
        stateseal::UnixTime::from_secs(1_782_950_400),
        &r,
        &mac,
    )
    .expect("seal")
}

/// The content of [`document`].
pub fn content(generation: u64, entry: &str) -> Keyset {
    Keyset {
        id: "ks_contract".into(),
        generation,
        // Every optional field set, so every store proves it keeps them.
        timing: Some(Timing::new(
            Duration::from_secs(30),
            Duration::from_secs(60),
            Duration::from_secs(600),
        )),
        rotation_claim: None,
        revocations: Vec::new(),
        keys: vec![KeyEntry {
            entry: entry.into(),
            kid: KeyId::from_hex("a014f40b"),
            alg: stateseal::TokenFormat::V1,
            kek: "local:///contract/kek".into(),
            wrapped: vec![7; 60],
            created_at: stateseal::UnixTime::from_secs(1_782_345_600),
            activate_at: stateseal::UnixTime::from_secs(1_782_345_600),
            retire_at: Some(stateseal::UnixTime::from_millis(1782346600500)),
            seals_reserved: 1 << 20,
        }],
    }
}

fn is_conflict(r: &Result<(), Error>) -> bool {
    matches!(r, Err(Error::Keyset(KeysetError::Conflict { .. })))
}

/// A full conditional read: the document and its version.
async fn read_versioned(store: &dyn KeysetStore) -> (Option<StoredKeyset>, Option<StoreVersion>) {
    match store.load_if_changed(None).await.expect("conditional read") {
        ConditionalLoad::Current { document, version } => (document, version),
        other => panic!("a read naming no version must return the document, got {other:?}"),
    }
}

fn is_unchanged(r: &Result<ConditionalLoad, Error>) -> bool {
    matches!(r, Ok(ConditionalLoad::Unchanged))
}

/// The conditional-read cases on a store holding a document; returns the
/// version of what it holds afterwards.
async fn conditional_reads(s: &impl StoreUnderTest, store: &dyn KeysetStore) {
    let current = store.load().await.expect("load").expect("a document");
    let (doc, version) = read_versioned(store).await;
    assert_eq!(doc.as_ref(), Some(&current));
    let Some(version) = version else {
        println!(
            "store contract {}: names no versions; conditional cases not run",
            store.uri()
        );
        return;
    };
    assert!(
        is_unchanged(&store.load_if_changed(Some(&version)).await),
        "nothing was written: unchanged"
    );
    assert!(
        is_unchanged(&s.open().load_if_changed(Some(&version)).await),
        "another handle sees the same version"
    );
    let foreign = StoreVersion::new("\"never-given-by-this-store\"");
    match store.load_if_changed(Some(&foreign)).await {
        Ok(ConditionalLoad::Current { document, .. }) => {
            assert_eq!(document, Some(current.clone()))
        }
        other => panic!("a version the store never gave must return the document, got {other:?}"),
    }
    // A write: the next conditional read returns it, with another version.
    let next = document(current.generation() + 1, "k_conditional");
    store
        .compare_and_swap(Some(current.generation()), &next)
        .await
        .expect("write");
    let after = match store.load_if_changed(Some(&version)).await {
        Ok(ConditionalLoad::Current {
            document: Some(d),
            version: after,
        }) => {
            assert_eq!(d, next, "the document written");
            after
        }
        other => panic!("after a write a conditional read must return it, got {other:?}"),
    };
    assert_ne!(after.as_ref(), Some(&version));
    // Put back as an operator or a restore would: never taken for the one in place.
    s.put_raw(&serde_json::from_slice(current.bytes()).expect("json"));
    if let Some(after) = after {
        match store.load_if_changed(Some(&after)).await {
            Ok(ConditionalLoad::Current { document, .. }) => {
                assert_eq!(document, Some(current.clone()));
            }
            other => panic!("a restored document must be returned, got {other:?}"),
        }
    }
}

/// Runs the whole contract against the location `s` opens, which must start
/// empty. Run [`crate::integrity::run`] after it.
///
/// # Panics
/// On the first rule the store breaks, saying which.
pub async fn run(s: &impl StoreUnderTest) {
    let store = s.open();
    let _named = crate::failure::NamedOnFailure::new("store", store.uri());
    assert_eq!(store.load().await.expect("empty store loads"), None);

    // Create-if-absent.
    let first = document(1, "k_first");
    store.compare_and_swap(None, &first).await.expect("create");
    assert!(
        is_conflict(
            &s.open()
                .compare_and_swap(None, &document(1, "k_again"))
                .await
        ),
        "a second create must conflict"
    );
    assert_eq!(store.load().await.expect("load"), Some(first.clone()));

    // Generations only go up.
    let same = store
        .compare_and_swap(Some(1), &document(1, "k_same"))
        .await;
    assert!(
        same.is_err(),
        "a write not above the expected generation was accepted"
    );
    assert_eq!(store.load().await.expect("load"), Some(first.clone()));

    // Truly concurrent writers on the same generation: exactly one wins.
    let handles: Vec<_> = (0..WRITERS).map(|_| s.open()).collect();
    let barrier = Arc::new(tokio::sync::Barrier::new(WRITERS));
    let tasks: Vec<_> = handles
        .into_iter()
        .enumerate()
        .map(|(i, h)| {
            let barrier = Arc::clone(&barrier);
            tokio::spawn(async move {
                let doc = document(2, &format!("k_writer{i}"));
                barrier.wait().await;
                (h.compare_and_swap(Some(1), &doc).await, doc)
            })
        })
        .collect();
    let mut winners = Vec::new();
    for t in tasks {
        let (result, doc) = t.await.expect("writer task");
        match result {
            Ok(()) => winners.push(doc),
            Err(Error::Keyset(KeysetError::Conflict { .. })) => {}
            Err(e) => panic!("a losing writer must get Conflict, got {e}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one of {WRITERS} writers wins");
    assert_eq!(store.load().await.expect("load"), winners.pop());

    // A stale writer (based on generation 1) changes nothing.
    let current = store.load().await.expect("load");
    assert!(is_conflict(
        &store
            .compare_and_swap(Some(1), &document(2, "k_stale"))
            .await
    ));
    assert_eq!(store.load().await.expect("load"), current);

    conditional_reads(s, store.as_ref()).await;

    // Not a keyset: an error that names the document, never "no keyset".
    s.put_raw(&serde_json::json!({"format": "not-a-keyset"}));
    match store.load().await {
        Err(Error::Keyset(KeysetError::Invalid { .. })) => {}
        other => panic!("garbage must load as Error::Keyset(KeysetError::Invalid), got {other:?}"),
    }
    // Too big: refused before it is parsed, never "no keyset".
    match s.holds_oversized() {
        Ok(()) => {
            let padding = "x".repeat(MAX_DOCUMENT_BYTES);
            s.put_raw(&serde_json::json!({"format": "stateseal.keyset/v2", "padding": padding}));
            match store.load().await {
                Err(Error::Keyset(KeysetError::Invalid { problem, .. }))
                    if problem.contains("more than") => {}
                other => panic!("an oversized document must be refused by size, got {other:?}"),
            }
        }
        Err(why) => println!(
            "store contract {}: oversized case not run: {why}",
            store.uri()
        ),
    }
    // An unauthenticated document loads as one (the trust refuses it).
    let v1 = StoredKeyset::unauthenticated(&content(1, "k_v1")).expect("v1");
    s.put_raw(&serde_json::from_slice(v1.bytes()).expect("json"));
    let loaded = store.load().await.expect("load").expect("a document");
    assert!(!loaded.is_authenticated());
    assert_eq!(
        loaded.unauthenticated_content(),
        v1.unauthenticated_content()
    );
    // An older generation comes back as it is.
    s.put_raw(&serde_json::from_slice(first.bytes()).expect("json"));
    assert_eq!(store.load().await.expect("load"), Some(first.clone()));

    // Outage: an error (never "unchanged"), then recovery.
    let (_, version) = read_versioned(store.as_ref()).await;
    s.break_service();
    let during = s.open().load().await;
    let during_conditional = match &version {
        Some(v) => Some(s.open().load_if_changed(Some(v)).await),
        None => None,
    };
    s.repair_service();
    if let Some(r) = during_conditional {
        assert!(
            matches!(r, Err(Error::Provider(ProviderError::Store { .. }))),
            "an unreachable store must answer a conditional read with Error::Provider(ProviderError::Store), got {r:?}"
        );
    }
    assert!(
        matches!(during, Err(Error::Provider(ProviderError::Store { .. }))),
        "an unreachable store must be Error::Provider(ProviderError::Store), got {during:?}"
    );
    assert_eq!(
        s.open().load().await.expect("load after recovery"),
        Some(first.clone())
    );

    // No permission: errors both ways, nothing written.
    let denied = match s.denied() {
        Ok(d) => d,
        Err(why) => {
            println!(
                "store contract {}: permission case not run: {why}",
                store.uri()
            );
            return;
        }
    };
    assert!(denied.load().await.is_err(), "a denied load succeeded");
    if let Some(v) = &version {
        let r = denied.load_if_changed(Some(v)).await;
        assert!(r.is_err(), "a denied conditional read must fail, got {r:?}");
    }
    let second = document(first.generation() + 1, "k_denied");
    assert!(
        denied
            .compare_and_swap(Some(first.generation()), &second)
            .await
            .is_err(),
        "a denied write succeeded"
    );
    assert_eq!(store.load().await.expect("load"), Some(first));
}
