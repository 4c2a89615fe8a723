//! Revocation without a rotation: entries written into the authenticated
//! document reach an instance with its next refresh and refuse exactly the
//! states they cover (reason `revoked`, counted like every reason), and the
//! logs never name the principal; a fleet refreshing on its jittered
//! schedule refuses them within R. The helpers serve `revocation_document` too.

use stateseal_testkit::instant;
use std::sync::Arc;

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use stateseal::rotation::{KeysetTrust, RefreshPacing, Timing, TrustPolicy, revoke};
use stateseal::{
    KeysetStore, MintOptions, OpenOptions, Principal, ProviderRegistry, RejectReason, Revocation,
    RevocationSelector,
};
use stateseal_testkit::keysets;
use stateseal_testkit::logs::Logs;
use stateseal_testkit::member::{Member, round};

use crate::fleet::{local_keyset, local_registry};
use crate::recorded::block_on_recorded;

pub(crate) const T0: f64 = 1_782_345_600.0;

pub(crate) fn alice() -> Principal {
    Principal::from_components(
        "app-1",
        Some("https://as.example"),
        Some("alice@example.com"),
    )
}

pub(crate) fn bob() -> Principal {
    Principal::from_components("app-1", Some("https://as.example"), Some("bob@example.com"))
}

fn other_client() -> Principal {
    Principal::from_components(
        "app-2",
        Some("https://as.example"),
        Some("carol@example.com"),
    )
}

pub(crate) fn trust() -> KeysetTrust {
    KeysetTrust::new(TrustPolicy::default())
}

/// A state for `p` minted by `m` at `at`.
pub(crate) fn mint(m: &Member, p: Option<&Principal>, at: f64) -> String {
    m.env
        .mint(
            &round(),
            b"s",
            MintOptions::new().principal(p).at(instant(at)),
        )
        .expect("mint")
}

/// Why `token`, presented by `p`, is refused at `now` (`None`: it verifies).
pub(crate) fn refusal(
    m: &Member,
    token: &str,
    p: Option<&Principal>,
    now: f64,
) -> Option<RejectReason> {
    match m
        .env
        .open(
            &round(),
            token,
            OpenOptions::new().principal(p).at(instant(now)),
        )
        .map(|o| o.state)
    {
        Ok(_) => None,
        Err(e) => Some(e.reject_reason().expect("a rejection")),
    }
}

/// The revocation tests' first act: `p`'s states issued before T0 + 20 s
/// are revoked by a write at T0 + 30 s, which `m` adopts at T0 + 31 s.
pub(crate) async fn revoke_and_adopt(
    store: &dyn KeysetStore,
    registry: &ProviderRegistry,
    m: &Member,
    p: &Principal,
) -> Revocation {
    let entry = Revocation::principal(p, instant(T0 + 20.0));
    revoke(store, registry, &trust(), entry.clone(), instant(T0 + 30.0))
        .await
        .expect("revoke");
    m.sched
        .refresh_at(instant(T0 + 31.0))
        .await
        .expect("refresh");
    entry
}

pub(crate) async fn setup(
    tag: &str,
) -> (
    std::path::PathBuf,
    Arc<dyn KeysetStore>,
    ProviderRegistry,
    Member,
) {
    let registry = local_registry();
    let (dir, store) = local_keyset(tag, &registry, Timing::default(), T0).await;
    let m = Member::new(&registry, store.clone(), stateseal_testkit::instant(T0));
    m.sched.refresh_at(instant(T0)).await.expect("refresh");
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
            Revocation::principal(&a, instant(before)),
            instant(T0 + 30.0),
        )
        .await
        .expect("revoke");
        assert!(done.written);
        assert_eq!(done.live_until.as_secs_f64(), before + 600.0 + 60.0);
        // Verification is network-free: nothing changes until the instance's next refresh...
        assert_eq!(refusal(&m, &early_a, Some(&a), T0 + 31.0), None);
        // ...which is at most R later.
        m.sched
            .refresh_at(instant(T0 + 31.0))
            .await
            .expect("refresh");
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
            Revocation::principal(&a, instant(before)),
            instant(T0 + 40.0),
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
    let snapshot = snapshotter.snapshot().into_vec();
    let revoked: u64 = snapshot
        .iter()
        .filter(|(k, ..)| {
            k.key().name() == "stateseal_rejections_total"
                && k.key()
                    .labels()
                    .any(|l| l.key() == "reason" && l.value() == "revoked")
        })
        .map(|(.., v)| match v {
            DebugValue::Counter(n) => *n,
            _ => 0,
        })
        .sum();
    assert_eq!(revoked, 1);
    let live = snapshot
        .iter()
        .find(|(k, ..)| k.key().name() == "stateseal_revocations_live")
        .map(|(.., v)| match v {
            DebugValue::Gauge(g) => g.into_inner(),
            _ => f64::NAN,
        });
    assert_eq!(live, Some(1.0), "the gauge counts the live entry");
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
        Revocation::client_id("app-1", instant(T0 + 20.0)),
        instant(T0 + 30.0),
    )
    .await
    .expect("revoke");
    m.sched
        .refresh_at(instant(T0 + 40.0))
        .await
        .expect("refresh");
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
        Revocation::all_before(instant(T0 + 15.0)),
        instant(T0 + 50.0),
    )
    .await
    .expect("revoke");
    m.sched
        .refresh_at(instant(T0 + 60.0))
        .await
        .expect("refresh");
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
async fn logs_never_name_the_principal() {
    let logs = Logs::default();
    let _guard = logs.capture_all();
    let (dir, store, registry, m) = setup("revoke-logs").await;
    let a = alice();
    let token = mint(&m, Some(&a), T0 + 10.0);
    let entry = revoke_and_adopt(&*store, &registry, &m, &a).await;
    assert_eq!(
        refusal(&m, &token, Some(&a), T0 + 32.0),
        Some(RejectReason::Revoked)
    );
    keysets::resealed(&*store, &registry, |d| d.revocations.clear()).await;
    assert!(m.sched.refresh_at(instant(T0 + 61.0)).await.is_err());
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

/// Five instances on the jittered refresh schedule servers keep, verifying
/// states every half second while a revocation is written: each refuses the
/// covered states from its first refresh after the write, which comes within
/// R, and nothing else is ever refused.
#[tokio::test]
async fn a_revocation_during_live_traffic_reaches_every_instance_within_r() {
    let registry = local_registry();
    let (dir, store) = local_keyset("revoke-fleet", &registry, Timing::default(), T0).await;
    let timing = Timing::default();
    let pacing = RefreshPacing::new(&timing, 0.1);
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut unit = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut fleet = Vec::new();
    for _ in 0..5 {
        let m = Member::new(&registry, store.clone(), stateseal_testkit::instant(T0));
        m.sched.refresh_at(instant(T0)).await.expect("refresh");
        let next = T0 + pacing.first(unit()).as_secs_f64();
        fleet.push((m, next, None::<f64>));
    }
    let (a, b) = (alice(), bob());
    let written_at = T0 + 45.0;
    let old_a = mint(&fleet[0].0, Some(&a), T0 + 10.0);
    let old_b = mint(&fleet[1].0, Some(&b), T0 + 10.0);
    let new_a = mint(&fleet[2].0, Some(&a), written_at + 1.0);
    let mut t = T0;
    while t < T0 + 120.0 {
        t += 0.5;
        if t == written_at {
            revoke(
                &*store,
                &registry,
                &trust(),
                Revocation::principal(&a, instant(t)),
                instant(t),
            )
            .await
            .expect("revoke");
        }
        for (m, next, refused_from) in &mut fleet {
            if t >= *next {
                m.sched.refresh_at(instant(t)).await.expect("refresh");
                *next = t + pacing.after_success(unit()).as_secs_f64();
            }
            assert_eq!(refusal(m, &old_b, Some(&b), t), None, "another principal");
            if t > written_at + 1.0 {
                assert_eq!(refusal(m, &new_a, Some(&a), t), None, "issued after before");
            }
            let refused = refusal(m, &old_a, Some(&a), t) == Some(RejectReason::Revoked);
            match refused_from {
                Some(_) => assert!(refused, "an instance forgot the revocation at {t}"),
                None if refused => *refused_from = Some(t),
                None => {}
            }
        }
    }
    for (_, _, refused_from) in &fleet {
        let from = refused_from.expect("every instance refuses");
        assert!(from > written_at, "refused before the write");
        assert!(
            from - written_at <= timing.refresh_interval.as_secs_f64(),
            "{}s after the write, more than R",
            from - written_at
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A store writer without the KEK puts the pre-revocation document back (it
/// is authentic and unexpired). The running instance refuses it as a
/// rollback and keeps refusing the revoked state. A restarted instance has no
/// watermark: configured with the `min_generation` that `stateseal revoke`
/// prints, it refuses the document and serves nothing; without it, the newest
/// copy beside the document is its floor and it refuses the same. A writer
/// who also restores the copy makes an unpinned instance adopt the document
/// and accept the revoked state (what docs/security.md says remains).
#[tokio::test]
async fn a_restored_pre_revocation_document_is_refused_with_the_printed_min_generation() {
    let (dir, store, registry, running) = setup("revoke-restored").await;
    let a = alice();
    let early = mint(&running, Some(&a), T0 + 10.0);
    let path = dir.join("keyset.json");
    let backup = std::fs::read(&path).unwrap();
    let done = revoke(
        &*store,
        &registry,
        &trust(),
        Revocation::principal(&a, instant(T0 + 20.0)),
        instant(T0 + 30.0),
    )
    .await
    .expect("revoke");
    assert!(done.written);
    let revoked_at = done.keyset.doc.generation;
    running
        .sched
        .refresh_at(instant(T0 + 31.0))
        .await
        .expect("refresh");
    assert_eq!(
        refusal(&running, &early, Some(&a), T0 + 32.0),
        Some(RejectReason::Revoked)
    );
    std::fs::write(&path, &backup).expect("restore");
    let err = running
        .sched
        .refresh_at(instant(T0 + 40.0))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("rollback"), "{err}");
    assert_eq!(
        refusal(&running, &early, Some(&a), T0 + 41.0),
        Some(RejectReason::Revoked),
        "the running instance keeps its ring"
    );
    let pinned = Member::with_trust(
        &registry,
        store.clone(),
        stateseal_testkit::instant(T0 + 43.0),
        TrustPolicy {
            min_generation: revoked_at,
            ..TrustPolicy::default()
        },
    );
    let err = pinned
        .sched
        .refresh_at(instant(T0 + 43.0))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("min_generation"), "{err}");
    assert!(!pinned.sched.is_ready());
    assert_ne!(refusal(&pinned, &early, Some(&a), T0 + 44.0), None);
    // Not pinned: the newest copy beside the document is its floor.
    let unpinned = Member::new(
        &registry,
        store.clone(),
        stateseal_testkit::instant(T0 + 44.0),
    );
    let err = unpinned
        .sched
        .refresh_at(instant(T0 + 44.0))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(
            &err,
            stateseal::Error::Keyset(stateseal::KeysetError::Refused {
                reason: stateseal::KeysetRefusal::BehindNewest,
                ..
            })
        ) && text.contains(&format!(
            "the store holds generation 1, but generation {revoked_at} was written before it"
        )) && text.contains("--now-compromise"),
        "{text}"
    );
    assert!(!unpinned.sched.is_ready());
    assert_ne!(refusal(&unpinned, &early, Some(&a), T0 + 45.0), None);
    // Refused until the document changes: judged once, not at every refresh.
    assert!(unpinned.sched.refresh_at(instant(T0 + 60.0)).await.is_err());
    // A writer who restores the copy too leaves min_generation as the only floor.
    std::fs::write(dir.join("keyset.json.newest"), &backup).expect("restore the copy");
    let fooled = Member::new(
        &registry,
        store.clone(),
        stateseal_testkit::instant(T0 + 61.0),
    );
    fooled
        .sched
        .refresh_at(instant(T0 + 61.0))
        .await
        .expect("adopted");
    assert_eq!(
        refusal(&fooled, &early, Some(&a), T0 + 62.0),
        None,
        "what remains without min_generation"
    );
    let _ = std::fs::remove_dir_all(dir);
}
