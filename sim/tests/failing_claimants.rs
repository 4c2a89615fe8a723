//! Rotation liveness with k servers that cannot make keys (their KMS role
//! is denied generate-data-key): the first k claimants of every due rotation
//! fail, the worst case. Each failing claimant claims a rotation once, then
//! waits until every instance that has not claimed it yet had its turn, so a
//! due rotation lands within k × (claim lifetime + 4R) of falling due, plus
//! the first turn's refresh (2R), over many seeds.

mod scenarios;

use stateseal::rotation::CLAIM_TTL;
use stateseal_sim::{Scenario, Topology, run};

/// Ten writing servers for half a day, a rotation due every 3 h, `failing`
/// of them denied keys, random choices from `seed`.
fn fleet(failing: usize, seed: u64) -> Scenario {
    let mut s = scenarios::quiet_half_day(10);
    s.topology = Topology::Servers;
    s.failing_rotators = failing;
    s.seed = seed;
    s
}

fn check(failing: usize, seeds: std::ops::Range<u64>) {
    let r = Scenario::fleet_week(1).timing.refresh_interval;
    let bound =
        failing as f64 * (CLAIM_TTL.as_secs_f64() + 4.0 * r.as_secs_f64()) + 2.0 * r.as_secs_f64();
    let mut worst: f64 = 0.0;
    for seed in seeds {
        let report = run(&fleet(failing, seed)).expect("run");
        assert!(
            report.kms_denied >= failing as u64,
            "seed {seed}: {} denied",
            report.kms_denied
        );
        assert!(
            report.rotations.len() >= 3,
            "seed {seed}: {:?}",
            report.rotations
        );
        assert!(
            report.rotation_wait_max <= bound,
            "k = {failing}, seed {seed}: a rotation waited {} s, bound {bound} s",
            report.rotation_wait_max
        );
        worst = worst.max(report.rotation_wait_max);
    }
    println!("k = {failing} of 10: longest wait {worst:.0} s, bound {bound:.0} s");
}

#[test]
fn one_failing_claimant_of_ten_delays_a_rotation_by_one_claim_at_most() {
    check(1, 0..8);
}

#[test]
fn two_failing_claimants_of_ten_delay_a_rotation_by_two_claims_at_most() {
    check(2, 0..8);
}

#[test]
fn five_failing_claimants_of_ten_delay_a_rotation_by_five_claims_at_most() {
    check(5, 0..8);
}
