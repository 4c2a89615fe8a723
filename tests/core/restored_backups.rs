//! Operator writes on a keyset that is not the fleet's newest: a restored
//! backup is written over only by a rotation that retires it, and a spoiled,
//! foreign or unwritable newest copy beside the document stops no write.

use metrics_util::debugging::DebuggingRecorder;
use stateseal::rotation::{Timing, TrustPolicy};
use stateseal_testkit::instant;
use stateseal_testkit::keysets;
use std::time::Duration;

use crate::fleet::{local_keyset, local_registry};
use crate::keyset_integrity::{T0, config, scheduler};
use crate::recorded::{block_on_recorded, values};

/// A restored backup is refused by running instances (it looks exactly like a
/// rollback). A scheduled rotation or a renewal built on it would bring back
/// a key they pruned: the operator's write is refused, saying so, and nothing
/// is written (the newest copy beside the document shows what the fleet may
/// hold). An emergency rotation on it, which retires every other key now, is
/// written and adopted. Operator writes carry the clock floor.
#[tokio::test]
async fn a_write_on_a_restored_backup_is_refused_unless_it_retires_the_backup() {
    use stateseal::rotation::{
        DEFAULT_MAX_LIVE_KEYS, KeysetTrust, RotateMode, renew_keyset, rotate_keyset,
    };
    let registry = local_registry();
    let (dir, store) = local_keyset("integrity-restore", &registry, Timing::default(), T0).await;
    let path = dir.join("keyset.json");
    let copy = dir.join("keyset.json.newest");
    let backup = std::fs::read(&path).expect("backup");
    assert_eq!(std::fs::read(&copy).expect("init wrote the copy"), backup);
    let a = scheduler(store.clone(), &registry, config());
    a.refresh_at(instant(T0)).await.expect("refresh");
    let operator = KeysetTrust::new(TrustPolicy::default());
    let rotate = |at: f64, mode: RotateMode| {
        let (store, registry, operator) = (store.clone(), registry.clone(), &operator);
        async move {
            rotate_keyset(
                &*store,
                &registry,
                operator,
                None,
                instant(at),
                mode,
                DEFAULT_MAX_LIVE_KEYS,
            )
            .await
        }
    };
    // Two rotations; the second prunes the first key, which has long retired.
    let first = rotate(T0 + 10.0, RotateMode::Scheduled)
        .await
        .expect("rotate");
    assert_eq!(first.next.generation, (T0 + 10.0) as u64, "the clock floor");
    a.refresh_at(instant(T0 + 20.0)).await.expect("refresh");
    rotate(T0 + 2000.0, RotateMode::Scheduled)
        .await
        .expect("rotate");
    a.refresh_at(instant(T0 + 2010.0)).await.expect("refresh");
    let adopted = a.status().generation.expect("generation");
    assert_eq!(std::fs::read(&copy).unwrap(), std::fs::read(&path).unwrap());
    // The backup put back: refused.
    std::fs::write(&path, &backup).expect("restore");
    let err = a.refresh_at(instant(T0 + 2020.0)).await.unwrap_err();
    assert!(
        matches!(
            &err,
            stateseal::Error::Keyset(stateseal::KeysetError::Refused {
                reason: stateseal::KeysetRefusal::Rollback,
                ..
            })
        ),
        "{err}"
    );
    // A scheduled rotation or a renewal on it would revive the pruned key:
    // refused before writing, naming the generations, the reason and the ways out.
    let rotation = rotate(T0 + 3000.0, RotateMode::Scheduled)
        .await
        .expect_err("a rotation on a restored backup");
    let renewal = renew_keyset(
        &*store,
        &registry,
        &operator,
        1,
        Duration::from_secs(3600),
        instant(T0 + 3000.0),
    )
    .await
    .expect_err("a renewal of a restored backup");
    for err in [rotation, renewal] {
        let text = err.to_string();
        assert!(
            matches!(
                &err,
                stateseal::Error::Keyset(stateseal::KeysetError::BehindNewest(_))
            ) && text.contains("the store holds generation 1")
                && text.contains(&format!("generation {adopted} was written before it"))
                && text.contains("restored backup")
                && text.contains("pruned_returned")
                && text.contains("--now-compromise"),
            "{text}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), backup, "nothing written");
    }
    // The running instance still serves what it adopted.
    a.refresh_at(instant(T0 + 3010.0)).await.unwrap_err();
    assert_eq!(a.status().generation, Some(adopted));
    // Rotated with --now-compromise: written above every generation, adopted, its key seals.
    let emergency = rotate(T0 + 3100.0, RotateMode::Compromise)
        .await
        .expect("an emergency rotation on the backup");
    assert!(emergency.next.generation > adopted);
    // An instance whose clock runs a second behind the operator's reads it
    // while the backup's entries are still live on its clock: refused now,
    // adopted at its next refresh (the refusal is the clock's, not remembered).
    let early = a.refresh_at(instant(T0 + 3099.0)).await.unwrap_err();
    assert!(early.to_string().contains("(pruned_returned)"), "{early}");
    let st = a.refresh_at(instant(T0 + 3110.0)).await.expect("adopted");
    assert_eq!(st.generation, Some(emergency.next.generation));
    assert_eq!(st.ring.first(), Some(&emergency.kid.to_hex()));
    let _ = std::fs::remove_dir_all(dir);
}

/// The copy only detects: one that does not verify (a store writer's) turns
/// the check off rather than stopping rotations, and a copy another keyset
/// left at the location is superseded by the new keyset's first write.
#[tokio::test]
async fn a_spoiled_or_foreign_newest_copy_stops_no_write() {
    use stateseal::rotation::{DEFAULT_MAX_LIVE_KEYS, KeysetTrust, RotateMode, rotate_keyset};
    let registry = local_registry();
    let (dir, store) = local_keyset("integrity-copy", &registry, Timing::default(), T0).await;
    let path = dir.join("keyset.json");
    let copy = dir.join("keyset.json.newest");
    let operator = KeysetTrust::new(TrustPolicy::default());
    // A forged copy, far ahead, with a tag that does not verify.
    let mut forged: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&copy).unwrap()).unwrap();
    forged["generation"] = (1u64 << 60).into();
    std::fs::write(&copy, serde_json::to_vec(&forged).unwrap()).unwrap();
    let plan = rotate_keyset(
        &*store,
        &registry,
        &operator,
        None,
        instant(T0 + 10.0),
        RotateMode::Scheduled,
        DEFAULT_MAX_LIVE_KEYS,
    )
    .await
    .expect("a rotation despite the forged copy");
    assert_eq!(plan.next.generation, (T0 + 10.0) as u64, "not lifted by it");
    // A new keyset at the same location starts above the copy it finds, and
    // replaces it with its own document.
    std::fs::write(&copy, std::fs::read(&path).unwrap()).unwrap();
    std::fs::remove_file(&path).unwrap();
    let kek = format!("local://{}", dir.join("kek.bin").display());
    let fresh = stateseal::rotation::init_keyset(
        &*store,
        &registry,
        &kek,
        Timing::default(),
        instant(T0 + 20.0),
    )
    .await
    .expect("init");
    assert_eq!(fresh.generation, plan.next.generation + 1);
    assert_eq!(std::fs::read(&copy).unwrap(), std::fs::read(&path).unwrap());
    let _ = std::fs::remove_dir_all(dir);
}

/// A copy that cannot be read or written (here a directory sits where it
/// goes; or a writer not granted its object) stops no write: the rotation is
/// reported, the document holds it, and both failures are counted.
#[test]
fn a_copy_that_cannot_be_written_fails_no_write() {
    use stateseal::rotation::{DEFAULT_MAX_LIVE_KEYS, KeysetTrust, RotateMode, rotate_keyset};
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    block_on_recorded(&recorder, || async {
        let registry = local_registry();
        let (dir, store) = local_keyset("integrity-nocopy", &registry, Timing::default(), T0).await;
        let copy = dir.join("keyset.json.newest");
        std::fs::remove_file(&copy).expect("copy");
        std::fs::create_dir(&copy).expect("a directory in its way");
        let plan = rotate_keyset(
            &*store,
            &registry,
            &KeysetTrust::new(TrustPolicy::default()),
            None,
            instant(T0 + 10.0),
            RotateMode::Scheduled,
            DEFAULT_MAX_LIVE_KEYS,
        )
        .await
        .expect("the rotation landed");
        assert_eq!(
            keysets::stored(&*store).await.generation(),
            plan.next.generation
        );
        let _ = std::fs::remove_dir_all(dir);
    });
    let failures = values(&snapshotter)["stateseal_keyset_newest_copy_failures_total"];
    assert_eq!(
        failures, 2.0,
        "unreadable before the write, not updated after it"
    );
}
