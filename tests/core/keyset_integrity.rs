//! An instance and the freshness of its keyset: writers renew the document
//! before it goes stale; a stale document is kept (the last good one) until
//! the staleness bound, then the instance stops sealing; an unauthenticated
//! document is adopted only when configured, and then shows in the status, a
//! gauge and a warning at every refresh; configuration names the pins.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use metrics_util::debugging::DebuggingRecorder;
use stateseal::rotation::{SchedulerConfig, Timing, TrustPolicy};
use stateseal::setup::Config;
use stateseal::{KeysetStore, ProviderRegistry, RotationScheduler};
use stateseal_testkit::instant;
use stateseal_testkit::keysets;

use crate::fleet::{local_keyset, local_registry};
use crate::recorded::{block_on_recorded, values};

pub(crate) const T0: f64 = 1_782_345_600.0;
const WEEK: f64 = 7.0 * 86_400.0;

pub(crate) fn scheduler(
    store: Arc<dyn KeysetStore>,
    registry: &ProviderRegistry,
    config: SchedulerConfig,
) -> RotationScheduler {
    stateseal_testkit::member::instance(config, store, registry, stateseal_testkit::instant(T0))
}

pub(crate) fn config() -> SchedulerConfig {
    SchedulerConfig::builder()
        .rotation_period(None)
        .seal_reservation_block(None)
        .max_key_age(Duration::from_secs_f64(WEEK))
        .outage_grace(Duration::from_secs_f64(WEEK))
        .build()
        .expect("config")
}

#[tokio::test]
async fn a_writer_renews_before_the_document_goes_stale() {
    let registry = local_registry();
    let (dir, store) = local_keyset("integrity-renew", &registry, Timing::default(), T0).await;
    let writer = scheduler(store.clone(), &registry, config());
    writer.refresh_at(instant(T0)).await.expect("refresh");
    let first = writer.status().expires_at.expect("expires_at");
    assert_eq!(first, instant(T0 + WEEK));
    // More than half the validity left: nothing written.
    writer
        .refresh_at(instant(T0 + 3.0 * 86_400.0))
        .await
        .expect("refresh");
    assert_eq!(keysets::stored(&*store).await.generation(), 1);
    // Less than half: renewed (same content, next generation), adopted at the next refresh.
    let at = T0 + 4.0 * 86_400.0;
    writer.refresh_at(instant(at)).await.expect("refresh");
    writer
        .refresh_at(instant(at + 30.0))
        .await
        .expect("refresh");
    let st = writer.status();
    assert_eq!(st.generation, Some(2));
    assert_eq!(st.expires_at, Some(instant(at + WEEK)));
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
    reader
        .refresh_at(instant(at + 30.0))
        .await
        .expect("refresh");
    let stale = at + WEEK + 1.0;
    // Its last read finds the document unchanged, and still fresh...
    reader
        .refresh_at(instant(stale - 10.0))
        .await
        .expect("refresh");
    // ...the next one, unchanged too, finds it stale.
    let err = reader.refresh_at(instant(stale)).await.unwrap_err();
    assert!(
        matches!(
            &err,
            stateseal::Error::Keyset(stateseal::KeysetError::Refused {
                reason: stateseal::KeysetRefusal::Expired,
                ..
            })
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
            .max_store_staleness(Some(Duration::from_secs(3600)))
            .build()
            .expect("config"),
    );
    // Refreshing every 30 minutes up to the expiry: the last good read is just before it.
    let mut t = T0;
    while t < T0 + WEEK {
        reader.refresh_at(instant(t)).await.expect("refresh");
        t += 1800.0;
    }
    let expired = T0 + WEEK + 1.0;
    assert!(reader.refresh_at(instant(expired)).await.is_err());
    assert!(
        reader.is_ready(),
        "within the staleness bound the last good keys serve"
    );
    let err = reader
        .refresh_at(instant(T0 + WEEK + 3600.0))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("max_store_staleness"), "{err}");
    assert!(!reader.is_ready(), "past it the instance stops sealing");
    // A KEK holder renews it; the instance is ready again.
    let trust = stateseal::rotation::KeysetTrust::new(TrustPolicy::default());
    stateseal::rotation::renew_keyset(
        &*store,
        &registry,
        &trust,
        1,
        Duration::from_secs_f64(WEEK),
        instant(T0 + WEEK + 3700.0),
    )
    .await
    .expect("renew");
    reader
        .refresh_at(instant(T0 + WEEK + 3710.0))
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
        let err = strict.refresh_at(instant(T0)).await.unwrap_err();
        assert!(
            matches!(
                &err,
                stateseal::Error::Keyset(stateseal::KeysetError::Refused {
                    reason: stateseal::KeysetRefusal::Unauthenticated,
                    ..
                })
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
        lenient.refresh_at(instant(T0)).await.expect("adopted");
        lenient
            .refresh_at(instant(T0 + 30.0))
            .await
            .expect("adopted");
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
