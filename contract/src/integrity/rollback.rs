//! Rollback (an old authentic document put back), restarted instances and
//! writers on a restored backup, and a legitimate re-wrap under a new KEK.

use crate::instant;
use stateseal::keyset::KeysetPins;
use stateseal::provider::{KeyProvider, WrapContext};
use stateseal::rotation::{
    DEFAULT_MAX_LIVE_KEYS, KeysetTrust, RotateMode, SchedulerConfig, Timing, TrustPolicy,
    rotate_keyset,
};
use stateseal::{Error, KeysetError, KeysetRefusal, LocalProvider, MintOptions};
use std::time::Duration;

use super::PlaintextWrap;
use super::bench::{Bench, assert_refused, prefix_of};
use crate::keysets;
use crate::member::{instance, round};
use crate::store::StoreUnderTest;

/// An emergency rotation, then the document before it republished.
pub(super) async fn rollback<S: StoreUnderTest>(b: &mut Bench<'_, S>) {
    let (s, registry, trust) = (b.s, b.registry.clone(), b.trust.clone());
    // `rotate --now` during phase 1 is a legitimate edit: admitted.
    b.rotate("scheduled", RotateMode::Scheduled).await;
    let before_emergency = b.current().await;
    b.rotate("--now during phase 1", RotateMode::Compromise)
        .await;
    let emergency = b.sched.status().generation.expect("generation");

    // (b) Rollback: the pre-emergency authentic document, republished.
    b.t += 300.0;
    b.refuses(
        "an old authentic document",
        before_emergency.clone(),
        KeysetRefusal::Rollback,
        0,
    )
    .await;
    // A restarted instance refuses it once min_generation is raised…
    let restarted = |min_generation: u64, t: f64| {
        let config = SchedulerConfig::builder()
            .timing(Timing::new(
                Duration::from_secs(10),
                Duration::from_secs(5),
                Duration::from_secs(100),
            ))
            .rotation_period(None)
            .renew_keyset(false)
            .seal_reservation_block(None)
            .trust(TrustPolicy {
                min_generation,
                ..trust.clone()
            })
            .build()
            .expect("config");
        instance(config, s.open(), &registry, crate::instant(t))
    };
    let good = b.current().await;
    s.put_raw(&before_emergency);
    let err = restarted(emergency, b.t)
        .refresh_at(instant(b.t))
        .await
        .expect_err("a restored backup below min_generation");
    assert_refused(&err, KeysetRefusal::BelowMinimum);
    // …or once the document has gone stale.
    let stale_at = keysets::verified(&*b.store, &registry)
        .await
        .expires_at
        .expect("expires_at")
        .as_secs_f64()
        + 1.0;
    let err = restarted(0, stale_at)
        .refresh_at(instant(stale_at))
        .await
        .expect_err("a stale document");
    assert_refused(&err, KeysetRefusal::Expired);
    // An operator who restored that backup and rotates on schedule is told,
    // before anything is written, that the fleet would refuse the result: the
    // store's newest copy (every backend keeps one) remembers the emergency.
    let newest = b
        .store
        .newest_copy()
        .expect("every backend keeps a newest copy");
    assert_eq!(
        newest.load().await.expect("copy").map(|c| c.generation()),
        good["generation"].as_u64(),
        "the copy holds the newest write"
    );
    let placed = b.raw().await;
    let err = rotate_keyset(
        &*b.store,
        &registry,
        &KeysetTrust::new(trust.clone()),
        None,
        instant(b.t),
        RotateMode::Scheduled,
        DEFAULT_MAX_LIVE_KEYS,
    )
    .await
    .expect_err("a scheduled rotation on a restored backup");
    assert!(
        matches!(&err, Error::Keyset(KeysetError::BehindNewest(m)) if m.contains("restored backup") && m.contains(newest.uri())),
        "{err}"
    );
    assert_eq!(b.raw().await, placed, "the refused rotation wrote");
    // A restarted server with the library's defaults (renewals on, rotation by
    // age) has no watermark and adopts the backup, but neither renews, claims
    // on nor rotates it: its writes take the operator's floor, the newest copy.
    let writer = instance(
        SchedulerConfig::builder()
            .timing(Timing::new(
                Duration::from_secs(10),
                Duration::from_secs(5),
                Duration::from_secs(100),
            ))
            .rotation_period(Some(Duration::from_secs(200)))
            // Renewal due at once: less than half of 30 days is left.
            .keyset_validity(Duration::from_secs_f64(30.0 * 86_400.0))
            .trust(trust.clone())
            .build()
            .expect("config"),
        s.open(),
        &registry,
        crate::instant(b.t),
    );
    for dt in [0.0, 15.0, 45.0, 90.0] {
        let _ = writer.refresh_at(instant(b.t + dt)).await;
    }
    assert_eq!(
        b.raw().await,
        placed,
        "a restarted server wrote on a restored backup"
    );
    assert_eq!(
        newest.load().await.expect("copy").map(|c| c.generation()),
        good["generation"].as_u64(),
        "the copy still holds the newest write"
    );
    b.restore(&good).await;
}

/// A KEK holder re-wraps the primary key under a new KEK: an instance whose
/// pins name the new KEK admits it (same key id: the ring does not change);
/// one whose pins do not, refuses it.
pub(super) async fn rewrap<S: StoreUnderTest>(b: &mut Bench<'_, S>) {
    let (s, registry, trust) = (b.s, b.registry.clone(), b.trust.clone());
    let (kek, id) = (b.kek.clone(), b.id.clone());
    let new_kek = format!("{}://new-kek", PlaintextWrap::SCHEME);
    let widened = TrustPolicy {
        pins: Some(KeysetPins::new(&id, [prefix_of(&kek), new_kek.clone()]).expect("pins")),
        ..trust.clone()
    };
    let repinned = instance(
        SchedulerConfig::builder()
            .timing(Timing::new(
                Duration::from_secs(10),
                Duration::from_secs(5),
                Duration::from_secs(100),
            ))
            .rotation_period(None)
            .trust(widened)
            .build()
            .expect("config"),
        s.open(),
        &registry,
        crate::instant(b.t),
    );
    repinned.refresh_at(instant(b.t)).await.expect("refresh");
    let primary = repinned.status().ring.first().cloned();
    let good = b.current().await;
    let doc = keysets::verified(&*b.store, &registry).await.doc;
    let i = doc
        .keys
        .iter()
        .position(|e| e.kid.map(|k| k.to_hex()) == primary)
        .expect("the primary's entry");
    let e = doc.keys[i].clone();
    let secret = LocalProvider::new()
        .unwrap(
            &e.kek,
            &e.wrapped,
            WrapContext {
                keyset_id: &id,
                entry_id: &e.entry,
            },
        )
        .await
        .expect("the KEK holder unwraps");
    keysets::resealed(&*b.store, &registry, |d| {
        d.keys[i].kek = new_kek.clone();
        d.keys[i].wrapped = secret.expose().to_vec();
    })
    .await;
    b.t += 1.0;
    let st = repinned
        .refresh_at(instant(b.t))
        .await
        .expect("a re-wrap under a pinned KEK is admitted");
    assert_eq!(
        st.ring.first().cloned(),
        primary,
        "the re-wrap changed the key"
    );
    let err = b
        .sched
        .refresh_at(instant(b.t))
        .await
        .expect_err("not pinned here");
    assert_refused(&err, KeysetRefusal::UnpinnedKek);
    b.restore(&good).await;
    let token = b
        .env
        .mint(&round(), b"after", MintOptions::new().at(instant(b.t)))
        .expect("mint");
    assert!(b.works(b.t, &token));
}
