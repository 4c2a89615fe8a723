//! How large a fleet cold-starts cleanly under each KMS's and store's
//! documented limits (docs/operations.md's capacity table comes from here):
//! `cargo test --release -p stateseal-sim --test capacity -- --ignored --nocapture`.

use stateseal_sim::{KmsKind, Report, Scenario, StoreKind, run};

/// A cold start of `n` instances within `spread` seconds, and a few minutes after.
fn cold_start(n: usize, store: StoreKind, kms: KmsKind, spread: f64, quota: Option<u64>) -> Report {
    let mut s = Scenario::capacity(n, store, kms);
    s.days = 600.0 / 86_400.0;
    s.restart_every = None;
    s.rounds_per_second = 0.0;
    s.start_spread = spread;
    if let Some(q) = quota {
        s.kms.quota_per_s = q;
    }
    run(&s).expect("run")
}

/// The largest n (to a 2% step) for which `ok` holds, searching up to `max`.
fn largest(max: usize, ok: impl Fn(usize) -> bool) -> usize {
    let (mut good, mut bad) = (0usize, max + 1);
    while bad - good > (good / 50).max(50) {
        let mid = good + (bad - good) / 2;
        if ok(mid) {
            good = mid;
        } else {
            bad = mid;
        }
    }
    good
}

#[test]
#[ignore = "by hand: prints the capacity table"]
fn largest_clean_cold_starts() {
    let spread = std::env::var("STATESEAL_SIM_SPREAD")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5.0);
    println!("start spread {spread} s");
    println!("| store | KMS | no throttling | no exit at ready_timeout |");
    println!("|---|---|---:|---:|");
    for (store, kms) in [
        (StoreKind::Gcs, KmsKind::Gcp),
        (StoreKind::S3, KmsKind::Aws),
        (StoreKind::Vault, KmsKind::Vault),
        (StoreKind::Gcs, KmsKind::Aws),
    ] {
        let clean = largest(60_000, |n| {
            let r = cold_start(n, store, kms, spread, None);
            r.kms_throttled == 0 && r.reads_throttled == 0 && r.cold_start_late == 0
        });
        let no_exit = largest(60_000, |n| {
            cold_start(n, store, kms, spread, None).cold_start_late == 0
        });
        println!("| {store:?} | {kms:?} | {clean} | {no_exit} |");
    }
}

/// What 10,000 instances on Cloud KMS need: the quota, or the start spread.
#[test]
#[ignore = "by hand"]
fn ten_thousand_on_cloud_kms() {
    for (spread, quota) in [
        (5.0, None),
        (5.0, Some(4_000)),
        (5.0, Some(5_000)),
        (25.0, None),
        (30.0, None),
        (40.0, None),
    ] {
        let r = cold_start(10_000, StoreKind::Gcs, KmsKind::Gcp, spread, quota);
        println!(
            "spread {spread} s, quota {:?}/s: throttled {}, exits {}, late {}, cold start {:.1} s, KMS peak {}/s",
            quota.unwrap_or(1_000),
            r.kms_throttled,
            r.startup_exits,
            r.cold_start_late,
            r.cold_start_s,
            r.kms_peak_per_s
        );
    }
}

/// What `stateseal simulate --instances 10000 --store gcs --kms gcp --json`
/// reports (the command runs this scenario), and the same with the start
/// spread and the quota that make it clean.
#[test]
#[ignore = "by hand"]
fn the_simulate_command_at_ten_thousand_on_cloud_kms() {
    for (spread, quota) in [(5.0, None), (25.0, None), (5.0, Some(5_000))] {
        let mut s = Scenario::capacity(10_000, StoreKind::Gcs, KmsKind::Gcp);
        s.start_spread = spread;
        if let Some(q) = quota {
            s.kms.quota_per_s = q;
        }
        let started = std::time::Instant::now();
        let r = run(&s).expect("run");
        println!(
            "--start-spread {spread} --kms-quota {}: {:.0} s\n{}",
            s.kms.quota_per_s,
            started.elapsed().as_secs_f64(),
            r.to_json()
        );
    }
}
