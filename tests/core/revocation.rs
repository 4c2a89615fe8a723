//! Revocation without a rotation: entries written into the authenticated
//! document reach every instance with its next refresh and refuse exactly the
//! states they cover (reason `revoked`); they stay while anything they cover
//! can be valid, and an instance refuses a document that drops one earlier.

use std::sync::Arc;

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use stateseal::keyset::{MAX_REVOCATIONS, live_until, prunable};
use stateseal::rotation::{KeysetTrust, Timing, TrustPolicy, revoke};
use stateseal::{
    Error, KeysetStore, Principal, ProviderRegistry, RejectReason, Revocation, RevocationSelector,
};
use stateseal_testkit::keysets;
use stateseal_testkit::logs::Logs;
use stateseal_testkit::member::{Member, round};

use crate::fleet::{local_keyset, local_registry};
use crate::recorded::block_on_recorded;

const T0: f64 = 1_782_345_600.0;

fn alice() -> Principal {
    Principal::from_components(
        "app-1",
        Some("https://as.example"),
        Some("alice@example.com"),
    )
}

fn bob() -> Principal {
    Principal::from_components("app-1", Some("https://as.example"), Some("bob@example.com"))
}

fn other_client() -> Principal {
    Principal::from_components(
        "app-2",
        Some("https://as.example"),
        Some("carol@example.com"),
    )
}

fn trust() -> KeysetTrust {
    KeysetTrust::new(TrustPolicy::default())
}

/// A state for `p` minted by `m` at `at`.
fn mint(m: &Member, p: Option<&Principal>, at: f64) -> String {
    m.env.mint_at(&round(), b"s", p, at).expect("mint")
}

/// Why `token`, presented by `p`, is refused at `now` (`None`: it verifies).
fn refusal(m: &Member, token: &str, p: Option<&Principal>, now: f64) -> Option<RejectReason> {
    match m.env.verify_at(&round(), token, p, now) {
        Ok(_) => None,
        Err(e) => Some(e.reject_reason().expect("a rejection")),
    }
}

async fn setup(
    tag: &str,
) -> (
    std::path::PathBuf,
    Arc<dyn KeysetStore>,
    ProviderRegistry,
    Member,
) {
    let registry = local_registry();
    let (dir, store) = local_keyset(tag, &registry, Timing::default(), T0).await;
    let m = Member::new(&registry, store.clone(), T0);
    m.sched.refresh_at(T0).await.expect("refresh");
    (dir, store, registry, m)
}

#[test]
fn a_revoked_principal_is_refused_after_one_refresh_and_nothing_else() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    block_on_recorded(&recorder, || async {
        let (dir, store, registry, m) = setup("revoke-principal").await;
        let (a, b) = (alice(), bob());
        let early_a = mint(&m, Some(&a), T0 + 10.0);
        let early_b = mint(&m, Some(&b), T0 + 10.0);
        let unbound = mint(&m, None, T0 + 10.0);
        let before = T0 + 20.0;
        let late_a = mint(&m, Some(&a), before + 0.5);
        let done = revoke(
            &*store,
            &registry,
            &trust(),
            Revocation::principal(&a, before),
            T0 + 30.0,
        )
        .await
        .expect("revoke");
        assert!(done.written);
        assert_eq!(done.live_until, before + 600.0 + 60.0);
        // Verification is network-free: nothing changes until the instance's next refresh...
        assert_eq!(refusal(&m, &early_a, Some(&a), T0 + 31.0), None);
        // ...which is at most R later.
        m.sched.refresh_at(T0 + 31.0).await.expect("refresh");
        let now = T0 + 32.0;
        assert_eq!(
            refusal(&m, &early_a, Some(&a), now),
            Some(RejectReason::Revoked)
        );
        assert_eq!(RejectReason::Revoked.as_str(), "revoked");
        assert_eq!(
            refusal(&m, &early_b, Some(&b), now),
            None,
            "another principal"
        );
        assert_eq!(refusal(&m, &unbound, None, now), None, "an unbound state");
        assert_eq!(
            refusal(&m, &late_a, Some(&a), now),
            None,
            "issued after before"
        );
        assert_eq!(refusal(&m, &mint(&m, Some(&a), now), Some(&a), now), None);
        // Writing the same entry again writes nothing.
        let again = revoke(
            &*store,
            &registry,
            &trust(),
            Revocation::principal(&a, before),
            T0 + 40.0,
        )
        .await
        .expect("revoke");
        assert!(!again.written);
        assert_eq!(
            keysets::content(&*store, &registry).await.revocations.len(),
            1
        );
        let _ = std::fs::remove_dir_all(dir);
    });
    let revoked: u64 = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(k, ..)| {
            k.key().name() == "stateseal_rejections_total"
                && k.key()
                    .labels()
                    .any(|l| l.key() == "reason" && l.value() == "revoked")
        })
        .map(|(.., v)| match v {
            DebugValue::Counter(n) => n,
            _ => 0,
        })
        .sum();
    assert_eq!(revoked, 1);
}

#[tokio::test]
async fn client_id_and_all_before_entries_cover_what_they_select() {
    let (dir, store, registry, m) = setup("revoke-selectors").await;
    let (a, b, c) = (alice(), bob(), other_client());
    let tokens: Vec<(Principal, String)> = [a.clone(), b.clone(), c.clone()]
        .into_iter()
        .map(|p| {
            let t = mint(&m, Some(&p), T0 + 10.0);
            (p, t)
        })
        .collect();
    let unbound = mint(&m, None, T0 + 10.0);
    revoke(
        &*store,
        &registry,
        &trust(),
        Revocation::client_id("app-1", T0 + 20.0),
        T0 + 30.0,
    )
    .await
    .expect("revoke");
    m.sched.refresh_at(T0 + 40.0).await.expect("refresh");
    let now = T0 + 41.0;
    let refused: Vec<bool> = tokens
        .iter()
        .map(|(p, t)| refusal(&m, t, Some(p), now) == Some(RejectReason::Revoked))
        .collect();
    assert_eq!(refused, [true, true, false], "app-1's principals only");
    assert_eq!(refusal(&m, &unbound, None, now), None);
    // Every state issued before a time, all users, bound or not.
    revoke(
        &*store,
        &registry,
        &trust(),
        Revocation::all_before(T0 + 15.0),
        T0 + 50.0,
    )
    .await
    .expect("revoke");
    m.sched.refresh_at(T0 + 60.0).await.expect("refresh");
    let now = T0 + 61.0;
    assert_eq!(
        refusal(&m, &unbound, None, now),
        Some(RejectReason::Revoked)
    );
    assert_eq!(
        refusal(&m, &tokens[2].1, Some(&c), now),
        Some(RejectReason::Revoked)
    );
    assert_eq!(refusal(&m, &mint(&m, None, T0 + 16.0), None, now), None);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn entries_round_trip_under_the_tag_and_a_store_writer_cannot_remove_them() {
    let (dir, store, registry, m) = setup("revoke-document").await;
    let entries = vec![
        Revocation::principal(&alice(), T0 + 1.5),
        Revocation::client_id("app-\"2\"", T0 + 2.0),
        Revocation::all_before(T0 + 3.0),
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
        .open(&registry, store.uri(), &forged, T0)
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::KeysetRefused { reason: "mac", .. }),
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
    let entry = Revocation::principal(&a, T0 + 20.0);
    revoke(&*store, &registry, &trust(), entry.clone(), T0 + 30.0)
        .await
        .expect("revoke");
    m.sched.refresh_at(T0 + 31.0).await.expect("refresh");
    // A KEK holder's write (or a restored backup) without the entry, while it is live.
    keysets::resealed(&*store, &registry, |d| d.revocations.clear()).await;
    let err = m.sched.refresh_at(T0 + 61.0).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::KeysetRefused {
                reason: "revocation_dropped",
                ..
            }
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
    let first = Revocation::client_id("app-1", T0 + 1.0);
    revoke(&*store, &registry, &trust(), first.clone(), T0 + 2.0)
        .await
        .expect("revoke");
    // Still live (on a clock S behind too): kept by the next write.
    let at = live_until(&first, &timing) + timing.max_skew - 1.0;
    assert!(!prunable(&first, &timing, at));
    revoke(
        &*store,
        &registry,
        &trust(),
        Revocation::all_before(at - 1.0),
        at,
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
    let second = Revocation::client_id("app-2", later);
    revoke(&*store, &registry, &trust(), second.clone(), later)
        .await
        .expect("revoke");
    let kinds: Vec<_> = keysets::content(&*store, &registry).await.revocations;
    assert!(!kinds.contains(&first), "{kinds:?}");
    assert_eq!(kinds.len(), 2);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn the_cap_refuses_a_write_and_leaves_the_document_unchanged() {
    let (dir, store, registry, _m) = setup("revoke-cap").await;
    keysets::resealed(&*store, &registry, |d| {
        d.revocations = (0..MAX_REVOCATIONS)
            .map(|i| Revocation::client_id(&format!("client-{i}"), T0))
            .collect();
    })
    .await;
    let before = keysets::stored(&*store).await;
    let err = revoke(
        &*store,
        &registry,
        &trust(),
        Revocation::all_before(T0),
        T0 + 1.0,
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
    over.revocations.push(Revocation::all_before(T0));
    let err = v.seal_next(&over, keysets::FAR_FUTURE).unwrap_err();
    assert!(err.to_string().contains("1001 entries"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn bad_times_are_refused_before_anything_is_written() {
    let (dir, store, registry, _m) = setup("revoke-times").await;
    let held = keysets::stored(&*store).await;
    for (entry, now) in [
        (Revocation::all_before(T0 + 61.0 + 10.0), T0 + 10.0),
        (Revocation::all_before(T0), T0 + 660.0),
        (Revocation::all_before(1_782_345_600_000.0), T0),
        (Revocation::all_before(f64::NAN), T0),
    ] {
        let err = revoke(&*store, &registry, &trust(), entry, now)
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Config(_)), "{err}");
    }
    assert_eq!(keysets::stored(&*store).await.bytes(), held.bytes());
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn logs_never_name_the_principal() {
    let logs = Logs::default();
    let _guard = logs.capture_all();
    let (dir, store, registry, m) = setup("revoke-logs").await;
    let a = alice();
    let token = mint(&m, Some(&a), T0 + 10.0);
    let entry = Revocation::principal(&a, T0 + 20.0);
    revoke(&*store, &registry, &trust(), entry.clone(), T0 + 30.0)
        .await
        .expect("revoke");
    m.sched.refresh_at(T0 + 31.0).await.expect("refresh");
    assert_eq!(
        refusal(&m, &token, Some(&a), T0 + 32.0),
        Some(RejectReason::Revoked)
    );
    keysets::resealed(&*store, &registry, |d| d.revocations.clear()).await;
    assert!(m.sched.refresh_at(T0 + 61.0).await.is_err());
    let text = logs.text();
    // The refusal names the entry by kind and time only. (Not asserted: the
    // info line of the write, which tests running beside this one can keep
    // out of a thread-local capture through tracing's shared callsite cache.)
    assert!(text.contains("drops a principal revocation"), "{text}");
    let RevocationSelector::Principal(digest) = &entry.selector else {
        unreachable!()
    };
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    for secret in ["alice", "app-1", &hex] {
        assert!(!text.contains(secret), "{secret} in the logs: {text}");
    }
    let _ = std::fs::remove_dir_all(dir);
}
