//! What a writer without the KEK can do to a keyset in any store: nothing the
//! fleet adopts. Run by every backend's own tests after [`crate::store`],
//! with `put_raw` as the attacker's write access.
//!
//! Each edit below is put in place with store write access alone; a pinned
//! instance (renewals and seal reservations on, so a writer that re-tagged
//! what it read would show) must refuse it with its own reason, keep sealing
//! and verifying with the last authentic keys, and write nothing; the
//! authentic document is then put back and a legitimate rotation is adopted.
//! Where the refusal is the pins', the KMS must not have been asked at all.

mod bench;
mod rollback;
mod wraps;

use std::path::Path;

use stateseal::rotation::seal_with_new_mac_key;
use stateseal::{FileStore, KeysetRefusal, StoredKeyset};

use crate::keysets;
use crate::store::StoreUnderTest;
use bench::{Bench, edited, json, kek_in, payload, seed, with_payload};
pub use wraps::{CountingLocal, PlaintextWrap};

const T0: f64 = 1_782_345_600.0;

/// Runs every attack on the keyset a pinned instance reads from the store
/// under test, with [`StoreUnderTest::put_raw`] as the attacker's write access.
/// `dir` (an existing directory of the caller's) holds the KEKs (local files)
/// and scratch documents. Run it after [`crate::store::run`].
///
/// # Panics
/// Naming the attack that got through (`… : adopted`) or the rule the
/// instance broke while refusing it.
pub async fn run(s: &impl StoreUnderTest, dir: &Path) {
    let _named = crate::failure::NamedOnFailure::new("integrity", s.open().uri());
    let mut b = Bench::new(s, dir).await;
    tampering(&mut b, dir).await;
    rollback::rollback(&mut b).await;
    rollback::rewrap(&mut b).await;
}

/// Edits of the content, and documents sealed under another MAC key or KEK.
async fn tampering<S: StoreUnderTest>(b: &mut Bench<'_, S>, dir: &Path) {
    let (s, registry, kek) = (b.s, b.registry.clone(), b.kek.clone());
    let attacker_kek = kek_in(dir, "p10");
    // (c) Freeze rotation: an entry activating in 9999, reservations lowered, a retirement dropped.
    let g = b.current().await;
    let freeze = edited(&g, |p| {
        p["keys"][0]["activate_at"] = "9999-12-31T00:00:00Z".into()
    });
    b.refuses("activation in 9999", freeze, KeysetRefusal::Mac, 0)
        .await;
    let g = b.current().await;
    let lower = edited(&g, |p| p["keys"][0]["seals_reserved"] = 0.into());
    b.refuses("reservations lowered", lower, KeysetRefusal::Mac, 0)
        .await;
    let g = b.current().await;
    let keep = edited(&g, |p| {
        for k in p["keys"].as_array_mut().expect("keys") {
            k["retire_at"] = serde_json::Value::Null;
        }
    });
    b.refuses("retirement dropped", keep, KeysetRefusal::Mac, 0)
        .await;
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
    b.refuses(
        "re-spelled payload",
        with_payload(&g, &respelled),
        KeysetRefusal::Mac,
        0,
    )
    .await;
    let g = b.current().await;
    let truncated = edited(&g, |p| {
        let keys = p["keys"].as_array_mut().expect("keys");
        keys.last_mut()
            .and_then(serde_json::Value::as_object_mut)
            .map(|e| e.remove("retire_at"));
        keys.truncate(1);
    });
    b.refuses("truncated entry", truncated, KeysetRefusal::Mac, 0)
        .await;

    // (a) KEK substitution: the attacker's own keyset material under their KEK.
    let theirs = seed(&registry, dir, "theirs.json", &kek).await;
    let g = b.current().await;
    let mut other_tag = g.clone();
    other_tag["mac"] = json(&theirs)["mac"].clone();
    // One KMS call: the other keyset's MAC key does not unwrap for this keyset id.
    b.refuses("another keyset's MAC", other_tag, KeysetRefusal::Mac, 1)
        .await;
    b.refuses(
        "another keyset's document",
        json(&theirs),
        KeysetRefusal::OtherKeyset,
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
    entry.activate_at = crate::instant(b.t);
    entry.created_at = crate::instant(b.t);
    forged.keys.push(entry);
    let (under_theirs, _) =
        seal_with_new_mac_key(&registry, &forged, &attacker_kek, keysets::FAR_FUTURE)
            .await
            .expect("attacker seals");
    b.refuses(
        "MAC key under the attacker's KEK (p10 vs pin p1/)",
        json(&under_theirs),
        KeysetRefusal::UnpinnedKek,
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
        KeysetRefusal::Unauthenticated,
        0,
    )
    .await;

    // Too big: refused by size, before parsing.
    match s.holds_oversized() {
        Ok(()) => {
            let mut huge = b.current().await;
            huge["padding"] = "x".repeat(stateseal::keyset::MAX_DOCUMENT_BYTES).into();
            b.refuses("a huge document", huge, KeysetRefusal::Invalid, 0)
                .await;
        }
        Err(why) => println!("integrity contract: huge document not run: {why}"),
    }
}
