//! The GCP-native deployment: Cloud KMS (the REST contract double) wraps the
//! data keys, Cloud Storage (fake-gcs-server behind the test kit's
//! precondition front) holds the keyset. The CLI's lifecycle on `gs://`,
//! concurrent rotations, a store outage, and the live test against a real
//! bucket (the fleet through three rotations is in `gcs_fleet.rs`).

use std::sync::Arc;

use stateseal::rotation::{
    DEFAULT_MAX_LIVE_KEYS, KeysetTrust, RotateMode, Timing, init_keyset, rotate_keyset,
};
use stateseal::{Error, KeysetStore, ProviderRegistry};
use stateseal_gcp_kms::GcpKmsConfig;
use stateseal_object_store::GcsConfig;
use stateseal_testkit::fake_gcs::FakeGcs;
use stateseal_testkit::gcs_front::GcsPreconditionFront;
use stateseal_testkit::keysets;

use crate::gcp::run_cli;
use crate::gcp_kms_contract::GcpKmsContract;
use crate::member::{Instance, T0, instance};
use crate::{json_of, text};

const BUCKET: &str = "stateseal-fleet";
const URI: &str = "gs://stateseal-fleet/prod/keyset.json";

/// Cloud KMS and Cloud Storage, as the tests run them.
pub(crate) struct Gcp {
    kms: GcpKmsContract,
    pub(crate) kek: String,
    emulator: FakeGcs,
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
            emulator,
            front,
        }
    }

    /// What the CLI and servers read: both endpoints, anonymous (loopback only).
    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("STATESEAL_GCP_KMS_ENDPOINT", self.kms.endpoint.clone()),
            ("STATESEAL_GCS_ENDPOINT", self.front.endpoint.clone()),
            ("STATESEAL_GCP_CREDENTIALS", "anonymous".to_owned()),
        ]
    }

    pub(crate) fn registry(&self) -> ProviderRegistry {
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

    pub(crate) fn store(&self) -> Arc<dyn KeysetStore> {
        self.registry().open_store(URI).expect("store")
    }
}

fn args(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_init_rotate_status_and_tokens_on_cloud_kms_and_gcs() {
    let gcp = Gcp::start("gcs-cli").await;
    let now = |dt: f64| (T0 + dt).to_string();
    let init = args(&[
        "init",
        "--kek",
        &gcp.kek,
        "--store",
        URI,
        "--now",
        &now(0.0),
        "--allow-clock-override",
        "--json",
    ]);
    let created = json_of(&run_cli(init.clone(), gcp.env()).await);
    let first = created["kid"].as_str().expect("kid").to_owned();
    // A second init finds the object and refuses, changing nothing.
    let generation = gcp.emulator.generation(BUCKET, "prod/keyset.json");
    let again = run_cli(init, gcp.env()).await;
    // --json: the error is a JSON object on stdout.
    assert_eq!(again.status.code(), Some(1), "{}", text(&again.stdout));
    let refusal: serde_json::Value = serde_json::from_slice(&again.stdout).expect("json");
    assert_eq!(refusal["exit_code"], 1);
    assert!(
        refusal["error"]
            .as_str()
            .expect("error")
            .contains("already"),
        "{refusal}"
    );
    assert_eq!(
        gcp.emulator.generation(BUCKET, "prod/keyset.json"),
        generation
    );

    // What init printed, pinned from here on.
    let pinned = || {
        gcp.env()
            .into_iter()
            .chain(crate::member::pin_vars(&created))
            .collect::<Vec<_>>()
    };
    // The CLI reaches the Cloud KMS double on this test's runtime: run it off the runtime.
    let envs = pinned();
    let (token, envs) = tokio::task::spawn_blocking(move || {
        let pairs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let token = crate::member::keyset_mint(URI, &pairs, 10.0);
        // Four operators rotate at once: exactly one lands, the others exit 1.
        crate::member::rotate_concurrently(URI, &envs);
        (token, envs)
    })
    .await
    .expect("mint and rotations");
    let st = json_of(
        &run_cli(
            args(&["status", "--store", URI, "--json", "--now", &now(230.0)]),
            pinned(),
        )
        .await,
    );
    // An operator's rotation carries a generation of at least its Unix time.
    assert_eq!(st["generation"], (T0 + 50.0) as u64, "{st}");
    assert_eq!(st["phase"], 2, "{st}");
    assert_eq!(st["ring"][1], first.as_str());
    let verify = tokio::task::spawn_blocking(move || {
        let pairs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        crate::member::keyset_verify(URI, &pairs, &token, 230.0)
    })
    .await
    .expect("verify");
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify.stderr));
    assert_eq!(text(&verify.stdout), "awaiting-confirm");

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

/// A `--json` failure: its exit code, and the message from the JSON on stdout.
fn json_error(out: &std::process::Output, code: i32) -> String {
    assert_eq!(out.status.code(), Some(code), "{}", text(&out.stdout));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["exit_code"], code);
    v["error"].as_str().expect("error").to_owned()
}

/// Six instances write the next generation at once through their own
/// clients: exactly one lands, the rest get `Conflict` (by the read before
/// the write, or by the generation precondition the front enforces).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_on_gcs_land_exactly_once() {
    let gcp = Gcp::start("gcs-race").await;
    let reg = gcp.registry();
    let store = gcp.store();
    let doc = init_keyset(&*store, &reg, &gcp.kek, Timing::default(), T0)
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
                Error::Conflict {
                    expected: Some(1),
                    ..
                }
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
    init_keyset(&*operator, &reg, &gcp.kek, Timing::default(), T0)
        .await
        .expect("init");
    let mut fleet: Vec<Instance> = Vec::new();
    for _ in 0..3 {
        fleet.push(instance(&reg, gcp.store()).await);
    }
    let trust = KeysetTrust::new(keysets::pins_of(&*operator, &reg).await);
    for m in &fleet {
        m.sched.refresh_at(T0).await.expect("refresh");
    }
    gcp.front.set_down(true);
    for dt in [30.0, 300.0, 1800.0] {
        for m in &fleet {
            let e = m.sched.refresh_at(T0 + dt).await.expect_err("store down");
            assert!(matches!(e, Error::Store { .. }), "{e}");
            assert!(m.works(T0 + dt), "serving at +{dt}");
        }
    }
    let writes = gcp.front.writes();
    assert!(
        rotate_keyset(
            &*operator,
            &reg,
            &trust,
            None,
            T0 + 1800.0,
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
        T0 + 1900.0,
        RotateMode::Scheduled,
        DEFAULT_MAX_LIVE_KEYS,
    )
    .await
    .expect("rotate after the outage");
    for m in &fleet {
        let st = m.sched.refresh_at(T0 + 1930.0).await.expect("refresh");
        assert_eq!(st.generation, Some((T0 + 1900.0) as u64));
        assert!(m.works(T0 + 1930.0));
    }
}

/// The store contract's core against a real bucket: `STATESEAL_GCS_LIVE_BUCKET`
/// (an empty prefix is used per run) and Application Default Credentials.
/// Skips, and says so, otherwise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_gcs_when_configured() {
    let Some(bucket) = std::env::var("STATESEAL_GCS_LIVE_BUCKET")
        .ok()
        .filter(|b| !b.is_empty())
    else {
        println!(
            "skipped: live Cloud Storage test (set STATESEAL_GCS_LIVE_BUCKET and Application Default Credentials to run it)"
        );
        return;
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
        Err(Error::Conflict { .. })
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
