//! A three-instance fleet on Cloud KMS and Cloud Storage (the harness of
//! `gcs.rs`) through three rotations under continuous cross-instance rounds.

use stateseal::rotation::{
    DEFAULT_MAX_LIVE_KEYS, KeysetTrust, Phase, RotateMode, Timing, describe_keyset, init_keyset,
    load_verified, rotate_keyset,
};
use stateseal_testkit::keysets;

use crate::gcs::Gcp;
use crate::member::{Instance, T0, instance, round};

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
    let mut fleet: Vec<Instance> = Vec::new();
    for _ in offsets {
        fleet.push(instance(&reg, gcp.store()).await);
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
        if ((t - T0) as u64).is_multiple_of(timing.refresh_interval as u64) {
            for ((m, off), seen) in fleet.iter().zip(offsets).zip(&mut primaries) {
                let st = m.sched.refresh_at(t + off).await.expect("refresh");
                seen.extend(st.ring.first().cloned());
            }
        }
        let doc = load_verified(&*operator, &reg, &trust, t)
            .await
            .expect("load")
            .doc;
        let phase = describe_keyset(&doc, t).phase.expect("phase");
        phases.insert(phase as u8);
        if phase == Phase::Three && rotations < 3 && t > T0 + 100.0 {
            written = rotate_keyset(
                &*operator,
                &reg,
                &trust,
                None,
                t,
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
    assert_eq!(keysets::stored(&*operator).await.generation(), written);
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
