//! The GCP-native deployment: Cloud KMS (the REST contract double) wraps the
//! data keys, Cloud Storage (fake-gcs-server behind the test kit's
//! precondition front) holds the keyset. The CLI's lifecycle on `gs://`,
//! concurrent rotations, a three-instance fleet through three rotations, a
//! store outage, and the live test against a real bucket.

use std::sync::Arc;

use stateseal::rotation::{
    DEFAULT_MAX_LIVE_KEYS, Phase, RotateMode, Timing, describe_keyset, init_keyset, rotate_keyset,
};
use stateseal::{Error, KeysetStore, ProviderRegistry};
use stateseal_gcp_kms::GcpKmsConfig;
use stateseal_object_store::GcsConfig;
use stateseal_testkit::fake_gcs::FakeGcs;
use stateseal_testkit::gcs_front::GcsPreconditionFront;

use crate::gcp::run_cli;
use crate::gcp_kms_contract::GcpKmsContract;
use crate::member::{Instance, T0, instance, round};
use crate::{json_of, text};

const BUCKET: &str = "stateseal-fleet";
const URI: &str = "gs://stateseal-fleet/prod/keyset.json";

/// Cloud KMS and Cloud Storage, as the tests run them.
struct Gcp {
    kms: GcpKmsContract,
    kek: String,
    emulator: FakeGcs,
    front: GcsPreconditionFront,
}

impl Gcp {
    async fn start(tag: &str) -> Self {
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

    fn store(&self) -> Arc<dyn KeysetStore> {
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

    // The CLI reaches the Cloud KMS double on this test's runtime: run it off the runtime.
    let envs = gcp.env();
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
            gcp.env(),
        )
        .await,
    );
    assert_eq!(st["generation"], 2, "{st}");
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
    assert_eq!(
        store.load().await.expect("load").expect("doc").generation,
        2
    );
    println!(
        "precondition refusals at the front: {}",
        gcp.front.refused()
    );
}

/// A state minted by one instance, to be verified by another later.
struct InFlight {
    token: String,
    verify_at: f64,
    by: usize,
}

/// Three instances (clocks up to 20 s apart) share the keyset in `gs://`;
/// an operator rotates three times, each time once the last rotation has
/// completed; every 5 s one instance mints a state that another verifies up
/// to 5 minutes later. No round may be rejected, in any phase.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_on_cloud_kms_and_gcs_rotates_three_times_with_zero_rejections() {
    let gcp = Gcp::start("gcs-fleet").await;
    let reg = gcp.registry();
    let operator = gcp.store();
    let timing = Timing::default();
    init_keyset(&*operator, &reg, &gcp.kek, timing, T0)
        .await
        .expect("init");
    let offsets = [-10.0, 0.0, 10.0];
    let fleet: Vec<Instance> = offsets
        .iter()
        .map(|_| instance(&reg, gcp.store()))
        .collect();
    let (mut rounds, mut rejected, mut rotations) = (0u32, Vec::new(), 0u32);
    let mut phases = std::collections::BTreeSet::new();
    let mut primaries = vec![std::collections::BTreeSet::new(); fleet.len()];
    let mut pending: Vec<InFlight> = Vec::new();
    let mut seed = 0x9e37_79b9_u64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let mut t = T0;
    while t < T0 + 4000.0 {
        if ((t - T0) as u64).is_multiple_of(timing.refresh_interval as u64) {
            for ((m, off), seen) in fleet.iter().zip(offsets).zip(&mut primaries) {
                let st = m.sched.refresh_at(t + off).await.expect("refresh");
                seen.extend(st.ring.first().cloned());
            }
        }
        let doc = operator.load().await.expect("load").expect("doc");
        let phase = describe_keyset(&doc, t).phase.expect("phase");
        phases.insert(phase as u8);
        if phase == Phase::Three && rotations < 3 && t > T0 + 100.0 {
            rotate_keyset(
                &*operator,
                &reg,
                None,
                t,
                RotateMode::Scheduled,
                DEFAULT_MAX_LIVE_KEYS,
            )
            .await
            .expect("rotate");
            rotations += 1;
        }
        let by = next(3) as usize;
        match fleet[by].env.mint_at(&round(), b"s", None, t + offsets[by]) {
            Ok(token) => pending.push(InFlight {
                token,
                verify_at: t + 5.0 * (1 + next(60)) as f64,
                by: (by + 1 + next(2) as usize) % 3,
            }),
            Err(e) => rejected.push(format!("mint at {t}: {e}")),
        }
        let (due, later): (Vec<_>, Vec<_>) = pending.into_iter().partition(|p| p.verify_at <= t);
        pending = later;
        for p in due {
            rounds += 1;
            if let Err(e) = fleet[p.by]
                .env
                .verify_at(&round(), &p.token, None, t + offsets[p.by])
            {
                rejected.push(format!("verify at {t} on {}: {e}", p.by));
            }
        }
        t += 5.0;
    }
    assert_eq!(rotations, 3);
    assert_eq!(phases.into_iter().collect::<Vec<_>>(), vec![1, 2, 3]);
    assert!(rounds > 700, "{rounds}");
    assert!(
        rejected.is_empty(),
        "{} of {rounds} rejected: {rejected:?}",
        rejected.len()
    );
    let doc = operator.load().await.expect("load").expect("doc");
    assert_eq!(doc.generation, 4);
    // Every instance sealed with each of the four keys in turn: the rotations
    // reached the whole fleet through the store.
    for seen in &primaries {
        assert_eq!(seen.len(), 4, "{primaries:?}");
    }
    println!(
        "GCP fleet: {rounds} rounds, 3 rotations, 0 rejected, {} GCS writes",
        gcp.front.writes()
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
    let fleet: Vec<Instance> = (0..3).map(|_| instance(&reg, gcp.store())).collect();
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
        None,
        T0 + 1900.0,
        RotateMode::Scheduled,
        DEFAULT_MAX_LIVE_KEYS,
    )
    .await
    .expect("rotate after the outage");
    for m in &fleet {
        let st = m.sched.refresh_at(T0 + 1930.0).await.expect("refresh");
        assert_eq!(st.generation, Some(2));
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
    let doc = stateseal_testkit::store_contract::document(1, "live-1");
    store.compare_and_swap(None, &doc).await.expect("create");
    assert!(matches!(
        store.compare_and_swap(None, &doc).await,
        Err(Error::Conflict { .. })
    ));
    let next = stateseal_testkit::store_contract::document(2, "live-2");
    let other = reg.open_store(&uri).expect("store");
    let (a, b) = tokio::join!(
        store.compare_and_swap(Some(1), &next),
        other.compare_and_swap(Some(1), &next)
    );
    assert!(a.is_ok() != b.is_ok(), "{a:?} {b:?}");
    assert_eq!(
        store.load().await.expect("load").expect("doc").generation,
        2
    );
    println!("live Cloud Storage test passed against {uri} (the object is left for inspection)");
}
