//! Controls that must fail: each sets up a fleet that is wrong in one
//! known way and asserts that the simulation detects and reports it. A
//! simulation that cannot fail these would prove nothing by passing.

mod scenarios;

use stateseal_sim::{KmsKind, Report, Scenario, StoreKind, Topology, run};

fn json(r: &Report) -> serde_json::Value {
    r.to_json()
}

/// A cold start on a KMS quota far below what it needs (each instance
/// unwraps two keys): calls are throttled, and servers reach ready_timeout
/// and exit, or the fleet is ready late. Both reported.
#[test]
fn a_kms_quota_below_a_cold_start_is_reported() {
    let mut s = Scenario::capacity(300, StoreKind::Gcs, KmsKind::Gcp);
    s.days = 0.02;
    s.restart_every = None;
    s.rounds_per_second = 0.0;
    s.kms.quota_per_s = 20;
    let r = run(&s).expect("run");
    let j = json(&r);
    println!("{j:#}");
    assert!(r.kms_throttled > 0, "no throttling reported");
    assert_eq!(j["kms"]["throttled"], r.kms_throttled);
    assert!(
        r.startup_exits > 0 || r.cold_start_late > 0,
        "neither exits nor a late cold start"
    );
    assert!(r.startup_exits > 0 && r.instances_past_ready_timeout > 0);
    assert!(r.cold_start_late > 0 && r.cold_start_s > s.ready_timeout);
    assert_eq!(j["cold_start_within_ready_timeout"], false);
    assert_eq!(j["startup_exits"], r.startup_exits);
    // CrashLoopBackOff spreads the restarts: every instance gets there.
    assert!(r.cold_start_s.is_finite(), "the fleet never became ready");
}

/// The same fleet on the documented quota: no throttling, no exit.
#[test]
fn the_same_cold_start_on_the_documented_quota_is_clean() {
    let mut s = Scenario::capacity(300, StoreKind::Gcs, KmsKind::Gcp);
    s.days = 0.02;
    s.restart_every = None;
    s.rounds_per_second = 0.0;
    let r = run(&s).expect("run");
    assert_eq!((r.kms_throttled, r.startup_exits), (0, 0), "{:#}", json(&r));
    assert_eq!(r.cold_start_late, 0);
    assert!(r.cold_start_s <= s.start_spread + s.ready_timeout);
}

/// Clocks further apart than S, the skew the timeline and the envelope
/// allow: instances reject states others sealed. Reported as rejected rounds.
#[test]
fn clock_skew_above_s_rejects_rounds() {
    let quiet = |skew: f64| {
        let mut s = scenarios::quiet_half_day(40);
        s.rounds_per_second = 0.5;
        s.clock_skew = skew;
        s
    };
    let within = run(&quiet(60.0)).expect("run");
    assert_eq!(within.rejected_rounds, 0, "{:#}", json(&within));
    let beyond = run(&quiet(8.0 * 60.0)).expect("run");
    println!("{:#}", json(&beyond));
    assert!(beyond.rejected_rounds > 0, "skew beyond S went unnoticed");
    assert_eq!(json(&beyond)["rejected_rounds"], beyond.rejected_rounds);
}

/// Writing servers, the first to claim a due rotation unable to generate a
/// data key (its KMS role is denied): with the old claim rule it claims
/// again at every refresh and the rotation freezes; with the current one it
/// steps back and another instance rotates within the claim's expiry plus
/// the rendezvous window.
#[test]
fn a_failing_claimant_froze_rotation_under_the_old_rule() {
    let fleet = |legacy: bool| {
        let mut s = scenarios::quiet_half_day(30);
        s.topology = Topology::Servers;
        s.failing_rotators = 1;
        s.legacy_reclaim = legacy;
        s
    };
    let old = run(&fleet(true)).expect("run");
    println!("old rule: {:#}", json(&old));
    assert!(old.kms_denied > 0);
    assert!(
        old.rotation_wait_max > 3600.0,
        "the old rule's frozen rotation went unnoticed: waited {} s",
        old.rotation_wait_max
    );
    let new = run(&fleet(false)).expect("run");
    println!("new rule: {:#}", json(&new));
    assert!(new.kms_denied > 0);
    let t = Scenario::fleet_week(1).timing;
    let bound = stateseal::rotation::CLAIM_TTL.as_secs_f64()
        + 4.0 * t.refresh_interval.as_secs_f64()
        + 2.0 * t.refresh_interval.as_secs_f64()
        + 60.0;
    assert!(
        new.rotation_wait_max <= bound,
        "rotation waited {} s, bound {bound}",
        new.rotation_wait_max
    );
    assert!(new.rotations.len() >= 3, "{:?}", new.rotations);
}

/// deploy/'s topology with a rotator job whose role cannot generate data
/// keys: it fails every run and no rotation lands. Reported.
#[test]
fn a_failing_rotator_job_is_reported() {
    let mut s = Scenario::capacity(20, StoreKind::Gcs, KmsKind::Aws);
    s.rotation_period = 4.0 * 3600.0;
    s.days = 0.5;
    s.failing_rotators = 1;
    let r = run(&s).expect("run");
    println!("{:#}", json(&r));
    assert!(r.rotations.is_empty());
    assert!(r.rotator_runs.1 > 0, "failed runs not reported");
    assert!(r.rotation_wait_max > 3600.0, "{}", r.rotation_wait_max);
}
