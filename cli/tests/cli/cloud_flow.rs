//! The flows every cloud's KMS and store go through the same way: the
//! operator's CLI lifecycle, and a three-instance fleet through three
//! rotations. Each cloud's file starts its services and runs these.

use std::sync::Arc;

use stateseal::rotation::{
    DEFAULT_MAX_LIVE_KEYS, KeysetTrust, Phase, RotateMode, Timing, describe_keyset, init_keyset,
    load_verified, rotate_keyset,
};
use stateseal::{KeysetStore, MintOptions, OpenOptions, ProviderRegistry};
use stateseal_testkit::instant;
use stateseal_testkit::keysets;

use crate::gcp::run_cli;
use crate::member::{Instance, T0, instance, round};
use crate::{json_of, text};

/// One cloud's KEK and store, as the tests reach them.
pub(crate) trait Cloud {
    /// The KEK URI.
    fn kek(&self) -> &str;
    /// The keyset store URI.
    fn uri(&self) -> &str;
    /// What the CLI and servers read to reach the services.
    fn env(&self) -> Vec<(&'static str, String)>;
    /// The same, as a registry.
    fn registry(&self) -> ProviderRegistry;
    /// A new handle on the store.
    fn store(&self) -> Arc<dyn KeysetStore> {
        self.registry().open_store(self.uri()).expect("store")
    }
}

pub(crate) fn args(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

/// `init` (and a second `init` refused, nothing changed), a keyset token
/// minted, four operators rotating at once (one lands), `status`, and the
/// token verified after the rotation: the operator's whole flow through the CLI.
pub(crate) async fn cli_lifecycle(cloud: &impl Cloud) {
    let uri = cloud.uri();
    let now = |dt: f64| (T0 + dt).to_string();
    let init = args(&[
        "init",
        "--kek",
        cloud.kek(),
        "--store",
        uri,
        "--now",
        &now(0.0),
        "--allow-clock-override",
        "--json",
    ]);
    let created = json_of(&run_cli(init.clone(), cloud.env()).await);
    let first = created["kid"].as_str().expect("kid").to_owned();
    // A second init finds the object and refuses, changing nothing.
    let before = keysets::stored(&*cloud.store()).await;
    let again = run_cli(init, cloud.env()).await;
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
        keysets::stored(&*cloud.store()).await.bytes(),
        before.bytes()
    );

    // What init printed, pinned from here on.
    let pinned = || {
        cloud
            .env()
            .into_iter()
            .chain(crate::member::pin_vars(&created))
            .collect::<Vec<_>>()
    };
    // The CLI may reach a double on this test's runtime: run it off the runtime.
    let envs = pinned();
    let owned_uri = uri.to_owned();
    let (token, envs) = tokio::task::spawn_blocking(move || {
        let uri = owned_uri.as_str();
        let pairs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let token = crate::member::keyset_mint(uri, &pairs, 10.0);
        // Four operators rotate at once: exactly one lands, the others exit 1.
        crate::member::rotate_concurrently(uri, &envs);
        (token, envs)
    })
    .await
    .expect("mint and rotations");
    let st = json_of(
        &run_cli(
            args(&["status", "--store", uri, "--json", "--now", &now(230.0)]),
            pinned(),
        )
        .await,
    );
    // An operator's rotation carries a generation of at least its Unix time.
    assert_eq!(st["generation"], (T0 + 50.0) as u64, "{st}");
    assert_eq!(st["phase"], 2, "{st}");
    assert_eq!(st["ring"][1], first.as_str());
    let owned_uri = uri.to_owned();
    let verify = tokio::task::spawn_blocking(move || {
        let uri = owned_uri.as_str();
        let pairs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        crate::member::keyset_verify(uri, &pairs, &token, 230.0)
    })
    .await
    .expect("verify");
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify.stderr));
    assert_eq!(text(&verify.stdout), "awaiting-confirm");
}

/// A state minted by one instance, to be verified by another later.
struct InFlight {
    token: String,
    verify_at: f64,
    by: usize,
}

/// Three instances (clocks up to 20 s apart) share the keyset in the store;
/// an operator rotates three times, each time once the last rotation has
/// completed; every 5 s one instance mints a state that another verifies up
/// to 5 minutes later. No round may be rejected, in any phase.
/// Returns the rounds verified.
pub(crate) async fn fleet_rotates_three_times(cloud: &impl Cloud) -> u32 {
    let reg = cloud.registry();
    let operator = cloud.store();
    let timing = Timing::default();
    init_keyset(&*operator, &reg, cloud.kek(), timing, instant(T0))
        .await
        .expect("init");
    let offsets = [-10.0, 0.0, 10.0];
    let mut fleet: Vec<Instance> = Vec::new();
    for _ in offsets {
        fleet.push(instance(&reg, cloud.store()).await);
    }
    let trust = KeysetTrust::new(keysets::pins_of(&*operator, &reg).await);
    let mut written = 1;
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
        if ((t - T0) as u64).is_multiple_of(timing.refresh_interval.as_secs()) {
            for ((m, off), seen) in fleet.iter().zip(offsets).zip(&mut primaries) {
                let st = m.sched.refresh_at(instant(t + off)).await.expect("refresh");
                seen.extend(st.ring.first().cloned());
            }
        }
        let doc = load_verified(&*operator, &reg, &trust, instant(t))
            .await
            .expect("load")
            .doc;
        let phase = describe_keyset(&doc, instant(t)).phase.expect("phase");
        phases.insert(phase as u8);
        if phase == Phase::Three && rotations < 3 && t > T0 + 100.0 {
            written = rotate_keyset(
                &*operator,
                &reg,
                &trust,
                None,
                instant(t),
                RotateMode::Scheduled,
                DEFAULT_MAX_LIVE_KEYS,
            )
            .await
            .expect("rotate")
            .next
            .generation;
            rotations += 1;
        }
        let by = next(3) as usize;
        let minted = MintOptions::new().at(instant(t + offsets[by]));
        match fleet[by].env.mint(&round(), b"s", minted) {
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
            if let Err(e) = fleet[p.by].env.open(
                &round(),
                &p.token,
                OpenOptions::new().at(instant(t + offsets[p.by])),
            ) {
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
    assert_eq!(keysets::stored(&*operator).await.generation(), written);
    // Every instance sealed with each of the four keys in turn: the rotations
    // reached the whole fleet through the store.
    for seen in &primaries {
        assert_eq!(seen.len(), 4, "{primaries:?}");
    }
    rounds
}
