//! Rolling restarts: how long a restarted instance is down is the
//! scenario's to say (`restart_downtime`), since the calibration measures a
//! loopback fleet's (about 0.1 s) where the model had assumed 1 s.

use stateseal::rotation::Timing;
use stateseal_sim::{KmsKind, Scenario, StoreKind, run};
use std::time::Duration;

/// Twelve instances, R = 2 s, restarted one after another over 40 s every
/// 60 s for three minutes, no rotation due, no traffic.
fn rolling(downtime: f64) -> Scenario {
    let mut s = Scenario::capacity(12, StoreKind::S3, KmsKind::Aws);
    s.days = 180.0 / 86_400.0;
    s.timing = Timing::new(
        Duration::from_secs(2),
        Duration::from_secs(1),
        Duration::from_secs(10),
    );
    s.rotation_period = 86_400.0;
    s.rounds_per_second = 0.0;
    s.restart_every = Some(60.0);
    s.restart_window = 40.0;
    s.restart_downtime = downtime;
    s
}

#[test]
fn a_longer_downtime_leaves_fewer_refreshes() {
    let short = run(&rolling(0.1)).expect("run");
    let long = run(&rolling(10.0)).expect("run");
    // 24 restarts, each 9.9 s longer down: about 24 × 9.9 / 1.8 ≈ 130
    // refreshes fewer at a mean interval of 0.9R.
    let fewer = short.unchanged_reads as i64 - long.unchanged_reads as i64;
    println!(
        "not-modified reads: {} (0.1 s down), {} (10 s down)",
        short.unchanged_reads, long.unchanged_reads
    );
    assert!(
        (90..=170).contains(&fewer),
        "0.1 s down: {} not-modified reads; 10 s down: {} ({fewer} fewer)",
        short.unchanged_reads,
        long.unchanged_reads
    );
}

#[test]
fn a_downtime_outside_its_range_is_refused() {
    for bad in [-0.5, f64::NAN, f64::INFINITY, 3_601.0] {
        let err = run(&rolling(bad)).expect_err("refused").to_string();
        assert!(
            err.contains("restart_downtime must be between 0 and 3,600 seconds"),
            "{bad}: {err}"
        );
    }
    for good in [0.0, 3_600.0] {
        rolling(good).validate().expect("accepted");
    }
}
