//! An instance and the freshness of its keyset: writers renew the document
//! before it goes stale; a stale document is kept (the last good one) until
//! the staleness bound, then the instance stops sealing; an unauthenticated
//! document is adopted only when configured, and then shows in the status, a
//! gauge and a warning at every refresh; configuration names the pins.

use std::collections::HashMap;
use std::sync::Arc;

use metrics_util::debugging::DebuggingRecorder;
use stateseal::rotation::{SchedulerConfig, Timing, TrustPolicy};
use stateseal::setup::Config;
use stateseal::{KeysetStore, ProviderRegistry, RotationScheduler};
use stateseal_testkit::keysets;

use crate::fleet::{local_keyset, local_registry};
use crate::recorded::{block_on_recorded, values};

const T0: f64 = 1_782_345_600.0;
const WEEK: f64 = 7.0 * 86_400.0;

fn scheduler(
    store: Arc<dyn KeysetStore>,
    registry: &ProviderRegistry,
    config: SchedulerConfig,
) -> RotationScheduler {
    stateseal_testkit::member::instance(config, store, registry, T0)
}

fn config() -> SchedulerConfig {
    SchedulerConfig::builder()
        .rotation_period(None)
        .seal_reservation_block(None)
        .max_key_age(WEEK)
        .outage_grace(WEEK)
        .build()
        .expect("config")
}

#[tokio::test]
async fn a_writer_renews_before_the_document_goes_stale() {
    let registry = local_registry();
    let (dir, store) = local_keyset("integrity-renew", &registry, Timing::default(), T0).await;
    let writer = scheduler(store.clone(), &registry, config());
    writer.refresh_at(T0).await.expect("refresh");
    let first = writer.status().expires_at.expect("expires_at");
    assert_eq!(first, T0 + WEEK);
    // More than half the validity left: nothing written.
    writer
        .refresh_at(T0 + 3.0 * 86_400.0)
        .await
        .expect("refresh");
    assert_eq!(keysets::stored(&*store).await.generation(), 1);
    // Less than half: renewed (same content, next generation), adopted at the next refresh.
    let at = T0 + 4.0 * 86_400.0;
    writer.refresh_at(at).await.expect("refresh");
    writer.refresh_at(at + 30.0).await.expect("refresh");
    let st = writer.status();
    assert_eq!(st.generation, Some(2));
    assert_eq!(st.expires_at, Some(at + WEEK));
    let v = keysets::verified(&*store, &registry).await;
    assert_eq!(v.doc.keys, keysets::content(&*store, &registry).await.keys);
    // A read-only instance never writes, and past the expiry refuses the stale document.
    let reader = scheduler(
        store.clone(),
        &registry,
        config()
            .to_builder()
            .renew_keyset(false)
            .build()
            .expect("config"),
    );
    reader.refresh_at(at + 30.0).await.expect("refresh");
    let stale = at + WEEK + 1.0;
    // Its last read finds the document unchanged, and still fresh...
    reader.refresh_at(stale - 10.0).await.expect("refresh");
    // ...the next one, unchanged too, finds it stale.
    let err = reader.refresh_at(stale).await.unwrap_err();
    assert!(
        matches!(
            &err,
            stateseal::Error::KeysetRefused {
                reason: "expired",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        keysets::stored(&*store).await.generation(),
        2,
        "the reader wrote"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_stale_document_is_kept_until_the_staleness_bound_then_sealing_stops() {
    let registry = local_registry();
    let (dir, store) = local_keyset("integrity-stale", &registry, Timing::default(), T0).await;
    let reader = scheduler(
        store.clone(),
        &registry,
        config()
            .to_builder()
            .renew_keyset(false)
            .max_store_staleness(Some(3600.0))
            .build()
            .expect("config"),
    );
    // Refreshing every 30 minutes up to the expiry: the last good read is just before it.
    let mut t = T0;
    while t < T0 + WEEK {
        reader.refresh_at(t).await.expect("refresh");
        t += 1800.0;
    }
    let expired = T0 + WEEK + 1.0;
    assert!(reader.refresh_at(expired).await.is_err());
    assert!(
        reader.is_ready(),
        "within the staleness bound the last good keys serve"
    );
    let err = reader.refresh_at(T0 + WEEK + 3600.0).await.unwrap_err();
    assert!(err.to_string().contains("max_store_staleness"), "{err}");
    assert!(!reader.is_ready(), "past it the instance stops sealing");
    // A KEK holder renews it; the instance is ready again.
    let trust = stateseal::rotation::KeysetTrust::new(TrustPolicy::default());
    stateseal::rotation::renew_keyset(&*store, &registry, &trust, 1, WEEK, T0 + WEEK + 3700.0)
        .await
        .expect("renew");
    reader
        .refresh_at(T0 + WEEK + 3710.0)
        .await
        .expect("fresh again");
    assert!(reader.is_ready());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn an_accepted_unauthenticated_document_shows_everywhere() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let (status, values) = block_on_recorded(&recorder, || async {
        let registry = local_registry();
        let (dir, store) = local_keyset("integrity-v1", &registry, Timing::default(), T0).await;
        // The same content, as the previous release wrote it.
        let doc = keysets::v1_keys(&keysets::content(&*store, &registry).await, &registry).await;
        let path = dir.join("keyset.json");
        let v1 = stateseal::StoredKeyset::unauthenticated(&doc).expect("v1");
        std::fs::write(&path, v1.bytes()).expect("write");
        // Refused by default…
        let strict = scheduler(store.clone(), &registry, config());
        let err = strict.refresh_at(T0).await.unwrap_err();
        assert!(
            matches!(
                &err,
                stateseal::Error::KeysetRefused {
                    reason: "unauthenticated",
                    ..
                }
            ),
            "{err}"
        );
        // …adopted with the migration setting, and flagged.
        let lenient = scheduler(
            store.clone(),
            &registry,
            config()
                .to_builder()
                .trust(TrustPolicy {
                    accept_unauthenticated: true,
                    ..TrustPolicy::default()
                })
                .build()
                .expect("config"),
        );
        lenient.refresh_at(T0).await.expect("adopted");
        lenient.refresh_at(T0 + 30.0).await.expect("adopted");
        let _ = std::fs::remove_dir_all(dir);
        (lenient.status(), values(&snapshotter))
    });
    assert!(status.unauthenticated && status.ready);
    assert_eq!(status.expires_at, None);
    assert_eq!(values["stateseal_keyset_unauthenticated"], 1.0);
    // One warning per refresh.
    assert_eq!(values["stateseal_keyset_unauthenticated_reads_total"], 2.0);
}

#[test]
fn configuration_names_the_pins_and_refuses_a_shared_store_without_them() {
    let ok = Config::from_toml_str(
        "store = 's3://b/k'\naudience = 'a'\nkeyset_id = 'ks_a'\n\
         keyset_keks = ['aws-kms://arn:aws:kms:eu-west-1:111122223333:key/']\nmin_generation = 7",
    )
    .expect("config");
    let trust = ok.trust_policy().expect("trust");
    assert_eq!(trust.min_generation, 7);
    assert_eq!(trust.pins.expect("pins").keyset_id(), "ks_a");
    for (text, says) in [
        ("store = 's3://b/k'\naudience = 'a'", "needs pins"),
        (
            "store = 's3://b/k'\naudience = 'a'\nkeyset_id = 'ks_a'",
            "keyset_keks is required",
        ),
        (
            "store = 'file:///k'\naudience = 'a'\nkeyset_keks = ['local:///k']",
            "keyset_id is required",
        ),
        (
            "store = 's3://b/k'\naudience = 'a'\nkeyset_id = 'ks_a'\nkeyset_keks = ['gcp-kms://projects/p1/../p10/']",
            "dot segments",
        ),
    ] {
        let e = Config::from_toml_str(text).unwrap_err().to_string();
        assert!(e.contains(says), "{text}: {e}");
    }
    // From the environment: the KEKs comma-separated, as `stateseal init` prints them.
    let vars: HashMap<&str, &str> = [
        ("STATESEAL_STORE", "gs://b/k"),
        ("STATESEAL_AUDIENCE", "a"),
        ("STATESEAL_KEYSET_ID", "ks_a"),
        (
            "STATESEAL_KEYSET_KEKS",
            "gcp-kms://projects/p1/locations/l/keyRings/r/cryptoKeys/k, gcp-kms://projects/p2/",
        ),
        ("STATESEAL_ACCEPT_UNAUTHENTICATED_KEYSET", "true"),
        ("STATESEAL_RENEW_KEYSET", "false"),
    ]
    .into_iter()
    .collect();
    let config = Config::from_vars(|k| vars.get(k).map(|v| (*v).to_owned())).expect("config");
    assert_eq!(config.keyset_keks.len(), 2);
    assert!(config.accept_unauthenticated_keyset && !config.renew_keyset);
    let pins = config.trust_policy().expect("trust").pins.expect("pins");
    assert!(pins.allows_kek("gcp-kms://projects/p2/locations/l/keyRings/r/cryptoKeys/k"));
    assert!(!pins.allows_kek("gcp-kms://projects/p20/locations/l/keyRings/r/cryptoKeys/k"));
}

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
    a.refresh_at(T0).await.expect("refresh");
    let operator = KeysetTrust::new(TrustPolicy::default());
    let rotate = |at: f64, mode: RotateMode| {
        let (store, registry, operator) = (store.clone(), registry.clone(), &operator);
        async move {
            rotate_keyset(
                &*store,
                &registry,
                operator,
                None,
                at,
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
    a.refresh_at(T0 + 20.0).await.expect("refresh");
    rotate(T0 + 2000.0, RotateMode::Scheduled)
        .await
        .expect("rotate");
    a.refresh_at(T0 + 2010.0).await.expect("refresh");
    let adopted = a.status().generation.expect("generation");
    assert_eq!(std::fs::read(&copy).unwrap(), std::fs::read(&path).unwrap());
    // The backup put back: refused.
    std::fs::write(&path, &backup).expect("restore");
    let err = a.refresh_at(T0 + 2020.0).await.unwrap_err();
    assert!(
        matches!(
            &err,
            stateseal::Error::KeysetRefused {
                reason: "rollback",
                ..
            }
        ),
        "{err}"
    );
    // A scheduled rotation or a renewal on it would revive the pruned key:
    // refused before writing, naming the generations, the reason and the ways out.
    let rotation = rotate(T0 + 3000.0, RotateMode::Scheduled)
        .await
        .expect_err("a rotation on a restored backup");
    let renewal = renew_keyset(&*store, &registry, &operator, 1, 3600.0, T0 + 3000.0)
        .await
        .expect_err("a renewal of a restored backup");
    for err in [rotation, renewal] {
        let text = err.to_string();
        assert!(
            matches!(&err, stateseal::Error::BehindNewest(_))
                && text.contains("the store holds generation 1")
                && text.contains(&format!("generation {adopted} was written before it"))
                && text.contains("restored backup")
                && text.contains("pruned_returned")
                && text.contains("--now-compromise"),
            "{text}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), backup, "nothing written");
    }
    // The running instance still serves what it adopted.
    a.refresh_at(T0 + 3010.0).await.unwrap_err();
    assert_eq!(a.status().generation, Some(adopted));
    // Rotated with --now-compromise: written above every generation, adopted, its key seals.
    let emergency = rotate(T0 + 3100.0, RotateMode::Compromise)
        .await
        .expect("an emergency rotation on the backup");
    assert!(emergency.next.generation > adopted);
    // An instance whose clock runs a second behind the operator's reads it
    // while the backup's entries are still live on its clock: refused now,
    // adopted at its next refresh (the refusal is the clock's, not remembered).
    let early = a.refresh_at(T0 + 3099.0).await.unwrap_err();
    assert!(early.to_string().contains("(pruned_returned)"), "{early}");
    let st = a.refresh_at(T0 + 3110.0).await.expect("adopted");
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
        T0 + 10.0,
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
    let fresh =
        stateseal::rotation::init_keyset(&*store, &registry, &kek, Timing::default(), T0 + 20.0)
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
            T0 + 10.0,
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
