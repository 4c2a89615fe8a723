//! The GCP-native deployment: Cloud KMS (the REST contract double) wraps the
//! data keys, Cloud Storage (fake-gcs-server behind the test kit's
//! precondition front) holds the keyset. The CLI's lifecycle on `gs://`, a
//! three-instance fleet through three rotations (both from `cloud_flow.rs`),
//! concurrent rotations, a store outage, and the live test against a real bucket.

use stateseal::rotation::{
    DEFAULT_MAX_LIVE_KEYS, KeysetTrust, RotateMode, Timing, init_keyset, rotate_keyset,
};
use stateseal::{Error, KeysetError, ProviderError, ProviderRegistry};
use stateseal_gcp_kms::GcpKmsConfig;
use stateseal_object_store::GcsConfig;
use stateseal_testkit::fake_gcs::FakeGcs;
use stateseal_testkit::gcs_front::GcsPreconditionFront;
use stateseal_testkit::instant;
use stateseal_testkit::keysets;

use crate::cloud_flow::{Cloud, args};
use crate::gcp::run_cli;
use crate::gcp_kms_contract::GcpKmsContract;
use crate::json_error;
use crate::member::{Instance, T0, instance};

const BUCKET: &str = "stateseal-fleet";
const URI: &str = "gs://stateseal-fleet/prod/keyset.json";

/// Cloud KMS and Cloud Storage, as the tests run them.
pub(crate) struct Gcp {
    kms: GcpKmsContract,
    pub(crate) kek: String,
    /// Kept running for the test's length.
    _emulator: FakeGcs,
    pub(crate) front: GcsPreconditionFront,
}

impl Gcp {
    pub(crate) async fn start(tag: &str) -> Self {
        let kms = GcpKmsContract::start().await;
        let kek = format!("gcp-kms://{}", kms.create_key("stateseal"));
        let emulator = FakeGcs::start(&crate::scratch(tag));
        emulator.create_bucket(BUCKET);
        let front = GcsPreconditionFront::start(&emulator);
        Self {
            kms,
            kek,
            _emulator: emulator,
            front,
        }
    }
}

impl Cloud for Gcp {
    fn kek(&self) -> &str {
        &self.kek
    }

    fn uri(&self) -> &str {
        URI
    }

    /// Both endpoints, anonymous (loopback only).
    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("STATESEAL_GCP_KMS_ENDPOINT", self.kms.endpoint.clone()),
            ("STATESEAL_GCS_ENDPOINT", self.front.endpoint.clone()),
            ("STATESEAL_GCP_CREDENTIALS", "anonymous".to_owned()),
        ]
    }

    fn registry(&self) -> ProviderRegistry {
        let mut r = ProviderRegistry::with_defaults();
        let kms = GcpKmsConfig::builder()
            .endpoint(&self.kms.endpoint)
            .anonymous_credentials(true)
            .build();
        stateseal_gcp_kms::register(&mut r, kms);
        let gcs = GcsConfig::builder()
            .endpoint(&self.front.endpoint)
            .anonymous_credentials(true)
            .max_attempts(1)
            .build();
        stateseal_object_store::register_gcs(&mut r, gcs);
        r
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_init_rotate_status_and_tokens_on_cloud_kms_and_gcs() {
    let gcp = Gcp::start("gcs-cli").await;
    crate::cloud_flow::cli_lifecycle(&gcp).await;
    // Without the loopback endpoint, anonymous credentials are refused before
    // any request; so is plain HTTP to anything but loopback.
    for (var, value, says) in [
        (
            "STATESEAL_GCP_CREDENTIALS",
            "anonymous",
            "STATESEAL_GCS_ENDPOINT",
        ),
        (
            "STATESEAL_GCS_ENDPOINT",
            "http://storage.example",
            "loopback",
        ),
    ] {
        let out = run_cli(
            args(&["status", "--store", URI, "--json"]),
            vec![(var, value.to_owned())],
        )
        .await;
        let error = json_error(&out, 2);
        assert!(
            error.starts_with("--store: invalid configuration: gcs:"),
            "{error}"
        );
        assert!(error.contains(says), "{error}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_on_cloud_kms_and_gcs_rotates_three_times_with_zero_rejections() {
    let gcp = Gcp::start("gcs-fleet").await;
    let rounds = crate::cloud_flow::fleet_rotates_three_times(&gcp).await;
    println!(
        "GCP fleet: {rounds} rounds, 3 rotations, 0 rejected, {} GCS writes",
        gcp.front.writes()
    );
}

/// Six instances write the next generation at once through their own
/// clients: exactly one lands, the rest get `Conflict` (by the read before
/// the write, or by the generation precondition the front enforces).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_on_gcs_land_exactly_once() {
    let gcp = Gcp::start("gcs-race").await;
    let reg = gcp.registry();
    let store = gcp.store();
    let doc = init_keyset(&*store, &reg, &gcp.kek, Timing::default(), instant(T0))
        .await
        .expect("init");
    let mut next = doc.clone();
    next.generation = 2;
    let next = keysets::verified(&*store, &reg)
        .await
        .seal_next(&next, keysets::FAR_FUTURE)
        .expect("seal");
    let tasks: Vec<_> = (0..6)
        .map(|_| {
            let (s, d) = (gcp.store(), next.clone());
            tokio::spawn(async move { s.compare_and_swap(Some(1), &d).await })
        })
        .collect();
    let mut results = Vec::new();
    for t in tasks {
        results.push(t.await.expect("task"));
    }
    assert_eq!(
        results.iter().filter(|r| r.is_ok()).count(),
        1,
        "{results:?}"
    );
    for lost in results.iter().filter_map(|r| r.as_ref().err()) {
        assert!(
            matches!(
                lost,
                Error::Keyset(KeysetError::Conflict {
                    expected: Some(1),
                    ..
                })
            ),
            "{lost}"
        );
    }
    assert_eq!(keysets::stored(&*store).await.generation(), 2);
    println!(
        "precondition refusals at the front: {}",
        gcp.front.refused()
    );
}

/// Cloud Storage unreachable: every instance keeps serving from the keyset it
/// has, an operator's rotation fails without writing, and once the store is
/// back the instances adopt the rotation the operator then makes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gcs_outage_keeps_the_fleet_serving_and_it_recovers() {
    let gcp = Gcp::start("gcs-outage").await;
    let reg = gcp.registry();
    let operator = gcp.store();
    init_keyset(&*operator, &reg, &gcp.kek, Timing::default(), instant(T0))
        .await
        .expect("init");
    let mut fleet: Vec<Instance> = Vec::new();
    for _ in 0..3 {
        fleet.push(instance(&reg, gcp.store()).await);
    }
    let trust = KeysetTrust::new(keysets::pins_of(&*operator, &reg).await);
    for m in &fleet {
        m.sched.refresh_at(instant(T0)).await.expect("refresh");
    }
    gcp.front.set_down(true);
    for dt in [30.0, 300.0, 1800.0] {
        for m in &fleet {
            let e = m
                .sched
                .refresh_at(instant(T0 + dt))
                .await
                .expect_err("store down");
            assert!(
                matches!(e, Error::Provider(ProviderError::Store { .. })),
                "{e}"
            );
            assert!(
                m.works(stateseal_testkit::instant(T0 + dt)),
                "serving at +{dt}"
            );
        }
    }
    let writes = gcp.front.writes();
    assert!(
        rotate_keyset(
            &*operator,
            &reg,
            &trust,
            None,
            instant(T0 + 1800.0),
            RotateMode::Scheduled,
            DEFAULT_MAX_LIVE_KEYS
        )
        .await
        .is_err()
    );
    gcp.front.set_down(false);
    assert_eq!(gcp.front.writes(), writes);
    rotate_keyset(
        &*operator,
        &reg,
        &trust,
        None,
        instant(T0 + 1900.0),
        RotateMode::Scheduled,
        DEFAULT_MAX_LIVE_KEYS,
    )
    .await
    .expect("rotate after the outage");
    for m in &fleet {
        let st = m
            .sched
            .refresh_at(instant(T0 + 1930.0))
            .await
            .expect("refresh");
        assert_eq!(st.generation, Some((T0 + 1900.0) as u64));
        assert!(m.works(stateseal_testkit::instant(T0 + 1930.0)));
    }
}

/// The store contract's core against a real bucket: `STATESEAL_GCS_LIVE_BUCKET`
/// (an empty prefix is used per run) and Application Default Credentials.
/// Ignored unless asked for (`--ignored`); fails naming what to set when
/// they are missing.
#[ignore = "live cloud: set STATESEAL_GCS_LIVE_BUCKET and Application Default Credentials, then run with --ignored"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_gcs_when_configured() {
    let Some(bucket) = std::env::var("STATESEAL_GCS_LIVE_BUCKET")
        .ok()
        .filter(|b| !b.is_empty())
    else {
        panic!(
            "live Cloud Storage test (set STATESEAL_GCS_LIVE_BUCKET and Application Default Credentials to run it)"
        );
    };
    let uri = format!(
        "gs://{bucket}/stateseal-live/{}/{T0}/keyset.json",
        std::process::id()
    );
    let mut reg = ProviderRegistry::with_defaults();
    reg.allow_local_kek();
    stateseal_object_store::register_gcs(&mut reg, GcsConfig::builder().build());
    let store = reg.open_store(&uri).expect("store");
    assert!(
        store.load().await.expect("load").is_none(),
        "{uri} must not exist yet"
    );
    let doc = stateseal_contract::store::document(1, "live-1");
    store.compare_and_swap(None, &doc).await.expect("create");
    assert!(matches!(
        store.compare_and_swap(None, &doc).await,
        Err(Error::Keyset(KeysetError::Conflict { .. }))
    ));
    let next = stateseal_contract::store::document(2, "live-2");
    let other = reg.open_store(&uri).expect("store");
    let (a, b) = tokio::join!(
        store.compare_and_swap(Some(1), &next),
        other.compare_and_swap(Some(1), &next)
    );
    assert!(a.is_ok() != b.is_ok(), "{a:?} {b:?}");
    assert_eq!(keysets::stored(&*store).await.generation(), 2);
    println!("live Cloud Storage test passed against {uri} (the object is left for inspection)");
}
