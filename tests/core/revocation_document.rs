//! Revocation entries in the keyset document: they round-trip under its tag
//! (digests, never principals), a write prunes those that cover nothing
//! valid, an instance refuses a document that drops a live one, and bad times
//! or a full list are refused with nothing written.

use stateseal::keyset::{MAX_REVOCATIONS, live_until, prunable};
use stateseal::rotation::{Timing, revoke};
use stateseal::{Error, KeysetError, KeysetRefusal, RejectReason, Revocation};
use stateseal_testkit::instant;
use stateseal_testkit::keysets;

use crate::revocation::{T0, alice, mint, refusal, revoke_and_adopt, setup, trust};

#[tokio::test]
async fn entries_round_trip_under_the_tag_and_a_store_writer_cannot_remove_them() {
    let (dir, store, registry, m) = setup("revoke-document").await;
    let entries = vec![
        Revocation::principal(&alice(), instant(T0 + 1.5)),
        Revocation::client_id("app-\"2\"", instant(T0 + 2.0)),
        Revocation::all_before(instant(T0 + 3.0)),
    ];
    let written = keysets::resealed(&*store, &registry, |d| d.revocations = entries.clone()).await;
    assert_eq!(keysets::content(&*store, &registry).await, written);
    assert_eq!(written.revocations, entries);
    // The document holds a digest, never the principal.
    let payload = keysets::envelope(&*store).await["payload"]
        .as_str()
        .unwrap()
        .to_owned();
    let payload = String::from_utf8(
        base64::Engine::decode(&base64::engine::general_purpose::STANDARD, payload).unwrap(),
    )
    .unwrap();
    assert!(!payload.contains("alice"), "{payload}");
    assert!(payload.contains("\"principal_sha256\""), "{payload}");
    // Emptying the list without the KEK breaks the tag.
    let mut v = keysets::envelope(&*store).await;
    let mut p: serde_json::Value = serde_json::from_str(&payload).unwrap();
    p.as_object_mut().unwrap().remove("revocations");
    v["payload"] = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        serde_json::to_vec_pretty(&p).unwrap(),
    )
    .into();
    let forged = stateseal::StoredKeyset::from_bytes(&serde_json::to_vec(&v).unwrap()).unwrap();
    let err = trust()
        .open(&registry, store.uri(), &forged, instant(T0))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Keyset(KeysetError::Refused {
                reason: KeysetRefusal::Mac,
                ..
            })
        ),
        "{err}"
    );
    // An unauthenticated document cannot carry them.
    let mut legacy: serde_json::Value = serde_json::from_slice(&written.to_json()).unwrap();
    legacy["revocations"] = serde_json::json!([{"kind": "all", "before": "2026-06-25T00:00:00Z"}]);
    let err = stateseal::Keyset::from_json(&serde_json::to_vec(&legacy).unwrap()).unwrap_err();
    assert!(err.to_string().contains("revocations"), "{err}");
    drop(m);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_document_dropping_a_live_entry_is_refused_until_nothing_it_covers_is_valid() {
    let (dir, store, registry, m) = setup("revoke-drop").await;
    let a = alice();
    let token = mint(&m, Some(&a), T0 + 10.0);
    let entry = revoke_and_adopt(&*store, &registry, &m, &a).await;
    // A KEK holder's write (or a restored backup) without the entry, while it is live.
    keysets::resealed(&*store, &registry, |d| d.revocations.clear()).await;
    let err = m.sched.refresh_at(instant(T0 + 61.0)).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Keyset(KeysetError::Refused {
                reason: KeysetRefusal::RevocationDropped,
                ..
            })
        ),
        "{err}"
    );
    assert!(err.to_string().contains("principal"), "{err}");
    assert_eq!(
        refusal(&m, &token, Some(&a), T0 + 62.0),
        Some(RejectReason::Revoked),
        "the last good document still revokes"
    );
    // Once nothing the entry covers can verify, the same document is adopted.
    let timing = Timing::default();
    let until = live_until(&entry, &timing);
    m.sched
        .refresh_at(until)
        .await
        .expect("adopted once the entry expired");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn writes_prune_entries_that_cover_nothing_valid() {
    let (dir, store, registry, _m) = setup("revoke-prune").await;
    let timing = Timing::default();
    let first = Revocation::client_id("app-1", instant(T0 + 1.0));
    revoke(
        &*store,
        &registry,
        &trust(),
        first.clone(),
        instant(T0 + 2.0),
    )
    .await
    .expect("revoke");
    // Still live (on a clock S behind too): kept by the next write.
    let at = (live_until(&first, &timing) + timing.max_skew).as_secs_f64() - 1.0;
    assert!(!prunable(&first, &timing, instant(at)));
    revoke(
        &*store,
        &registry,
        &trust(),
        Revocation::all_before(instant(at - 1.0)),
        instant(at),
    )
    .await
    .expect("revoke");
    assert!(
        keysets::content(&*store, &registry)
            .await
            .revocations
            .contains(&first)
    );
    // Past it: dropped by the next write.
    let later = at + 1.0;
    let second = Revocation::client_id("app-2", instant(later));
    revoke(&*store, &registry, &trust(), second.clone(), instant(later))
        .await
        .expect("revoke");
    let kinds: Vec<_> = keysets::content(&*store, &registry).await.revocations;
    assert!(!kinds.contains(&first), "{kinds:?}");
    assert_eq!(kinds.len(), 2);
    // A rotation prunes them too, once they cover nothing on any clock.
    let rotated = stateseal::rotation::rotate_keyset(
        &*store,
        &registry,
        &trust(),
        None,
        instant(later + 2.0 * timing.max_skew.as_secs_f64() + timing.ttl.as_secs_f64() - 1.0),
        stateseal::rotation::RotateMode::Scheduled,
        stateseal::rotation::DEFAULT_MAX_LIVE_KEYS,
    )
    .await
    .expect("rotate");
    assert_eq!(
        rotated.next.revocations,
        [second],
        "the older entry dropped"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn the_cap_refuses_a_write_and_leaves_the_document_unchanged() {
    let (dir, store, registry, _m) = setup("revoke-cap").await;
    keysets::resealed(&*store, &registry, |d| {
        d.revocations = (0..MAX_REVOCATIONS)
            .map(|i| Revocation::client_id(&format!("client-{i}"), instant(T0)))
            .collect();
    })
    .await;
    let before = keysets::stored(&*store).await;
    let err = revoke(
        &*store,
        &registry,
        &trust(),
        Revocation::all_before(instant(T0)),
        instant(T0 + 1.0),
    )
    .await
    .unwrap_err();
    assert!(matches!(&err, Error::Config(_)), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("1000 live revocations") && text.contains("nothing was written"),
        "{text}"
    );
    assert_eq!(keysets::stored(&*store).await.bytes(), before.bytes());
    // Nor can a KEK holder's own tool write more.
    let v = keysets::verified(&*store, &registry).await;
    let mut over = v.doc.clone();
    over.revocations.push(Revocation::all_before(instant(T0)));
    let err = v.seal_next(&over, keysets::FAR_FUTURE).unwrap_err();
    assert!(err.to_string().contains("1001 entries"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn bad_times_are_refused_before_anything_is_written() {
    let (dir, store, registry, _m) = setup("revoke-times").await;
    let held = keysets::stored(&*store).await;
    for (entry, now) in [
        (Revocation::all_before(instant(T0 + 61.0 + 10.0)), T0 + 10.0),
        (Revocation::all_before(instant(T0)), T0 + 660.0),
        (Revocation::all_before(instant(1_782_345_600_000.0)), T0),
    ] {
        let err = revoke(&*store, &registry, &trust(), entry, instant(now))
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Config(_)), "{err}");
    }
    assert_eq!(keysets::stored(&*store).await.bytes(), held.bytes());
    let _ = std::fs::remove_dir_all(dir);
}

/// A backup from before a revocation, put back and rotated with
/// `--now-compromise` (the documented restore): the write carries the newest
/// document's live revocations, so the fleet adopts it and the revoked states
/// stay refused.
#[tokio::test]
async fn a_write_on_a_restored_backup_keeps_the_live_revocations() {
    use stateseal::rotation::{DEFAULT_MAX_LIVE_KEYS, RotateMode, rotate_keyset};
    let (dir, store, registry, m) = setup("revoke-restore").await;
    let path = dir.join("keyset.json");
    let backup = std::fs::read(&path).expect("backup");
    let a = alice();
    let entry = revoke_and_adopt(&*store, &registry, &m, &a).await;
    std::fs::write(&path, &backup).expect("restore");
    let emergency = rotate_keyset(
        &*store,
        &registry,
        &trust(),
        None,
        instant(T0 + 40.0),
        RotateMode::Compromise,
        DEFAULT_MAX_LIVE_KEYS,
    )
    .await
    .expect("an emergency rotation on the backup");
    assert_eq!(emergency.next.revocations, [entry]);
    m.sched
        .refresh_at(instant(T0 + 41.0))
        .await
        .expect("adopted");
    // The old key retired with the compromise rotation; a state sealed under
    // the new key before `before` is what the entry still has to refuse.
    let fresh = mint(&m, Some(&a), T0 + 19.0);
    assert_eq!(
        refusal(&m, &fresh, Some(&a), T0 + 42.0),
        Some(RejectReason::Revoked)
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn before_covers_states_minted_in_its_millisecond_and_tick() {
    let (dir, store, registry, m) = setup("revoke-same-ms").await;
    let a = alice();
    // Minted 0.1 ms past a millisecond, revoked 0.3 ms later: rounded to the
    // nearest millisecond, `before` would fall before the state's iat.
    let minted = T0 + 10.0001;
    let token = mint(&m, Some(&a), minted);
    revoke(
        &*store,
        &registry,
        &trust(),
        Revocation::principal(&a, instant(minted + 0.0003)),
        instant(T0 + 11.0),
    )
    .await
    .expect("revoke");
    // A coarse clock: minted in the same tick the revocation reads as now.
    let same_tick = mint(&m, Some(&a), T0 + 10.5);
    revoke(
        &*store,
        &registry,
        &trust(),
        Revocation::principal(&a, instant(T0 + 10.5)),
        instant(T0 + 11.0),
    )
    .await
    .expect("revoke");
    m.sched
        .refresh_at(instant(T0 + 12.0))
        .await
        .expect("refresh");
    for t in [&token, &same_tick] {
        assert_eq!(
            refusal(&m, t, Some(&a), T0 + 12.0),
            Some(RejectReason::Revoked)
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}
