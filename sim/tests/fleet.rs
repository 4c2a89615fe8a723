//! The simulation against itself and against the bar.

use stateseal_sim::{Report, Scenario, run, table};

/// A day in which everything happens, on a small fleet.
fn eventful_day(instances: usize) -> Scenario {
    let mut s = Scenario::fleet_week(instances);
    s.days = 1.0;
    s.rotation_period = 4.0 * 3600.0;
    s.restart_every = Some(5.0 * 3600.0);
    s.store_outage = Some((30_000.0, 600.0));
    s.partition = Some((13.0 * 3600.0, 7200.0));
    s.emergency_at = Some(18.5 * 3600.0);
    s.rounds_per_second = 0.5;
    s
}

fn summary(r: &Report) -> String {
    serde_json::to_string_pretty(&r.to_json()).unwrap_or_default()
}

#[test]
fn skipping_idle_refreshes_changes_no_count() {
    let lumped = run(&eventful_day(30)).expect("run");
    let mut exact = eventful_day(30);
    exact.exact = true;
    let exact = run(&exact).expect("run");
    println!("{}", summary(&lumped));
    assert!(lumped.refreshes.1 > 10 * lumped.refreshes.0, "mostly idle");
    assert_eq!(exact.refreshes.1, 0);
    let mut l = lumped.to_json();
    let mut e = exact.to_json();
    for v in [&mut l, &mut e] {
        v["refreshes"] = serde_json::Value::Null;
    }
    assert_eq!(l, e, "exact:\n{}", summary(&exact));
}

/// The bar: 10,000 instances for a week (a scheduled rotation a day,
/// a rolling restart every 6 h, a 10-minute store outage, one instance cut
/// off for 2 h across a rotation, an emergency rotation, traffic verified on
/// random instances). Runs in release (`scripts/test.sh`); in a debug build
/// it would take most of an hour.
#[test]
#[cfg_attr(debug_assertions, ignore = "release only: scripts/test.sh runs it")]
fn ten_thousand_instances_for_a_week() {
    let s = Scenario::fleet_week(10_000);
    let r = run(&s).expect("run");
    println!("{}", summary(&r));
    println!("{}", table(std::slice::from_ref(&r)));
    assert_eq!(r.rejected_rounds, 0, "valid rounds rejected");
    assert!(r.rounds > 100_000, "{} rounds", r.rounds);
    // Rotations: one per day by age (the emergency one restarts the clock), none unscheduled.
    let emergency = r.rotations.iter().filter(|x| x.emergency).count();
    assert_eq!(emergency, 1);
    let window = 4.0 * s.timing.refresh_interval + s.timing.refresh_interval + 5.0;
    for rot in r.rotations.iter().filter(|x| !x.emergency) {
        let due = rot
            .due_at
            .expect("a server's rotation replaces a due primary");
        assert!(
            rot.written_at >= due && rot.written_at <= due + window,
            "rotation at {} for a primary due at {due}",
            rot.written_at
        );
    }
    let scheduled = r.rotations.len() - emergency;
    assert!(
        (6..=7).contains(&scheduled),
        "{scheduled} scheduled rotations in 7 days"
    );
    // Store writes per rotation: a claim and the rotation.
    assert!(
        r.writes_per_rotation() <= 3.0,
        "{}",
        r.writes_per_rotation()
    );
    // KMS calls per rotation: each instance unwraps the new key once, plus
    // the rotator's (processes restarted meanwhile unwrap it as they start).
    for rot in &r.rotations {
        assert!(
            rot.kms_calls <= s.instances as u64 + rot.restarts_while_adopting + 10,
            "{rot:?}"
        );
    }
    assert!(r.kms_peak_window <= r.kms_quota.0);
    // Conditional reads: every instance at most once per 0.9R on average, almost all `304`s.
    let budget = s.instances as f64 / (0.9 * s.timing.refresh_interval);
    assert!(
        r.reads_mean <= budget,
        "{} reads/s, budget {budget}",
        r.reads_mean
    );
    assert!(r.full_reads * 20 < r.unchanged_reads);
    assert!(r.cold_start_s <= 60.0, "cold start {} s", r.cold_start_s);
    assert!(
        r.partitioned_sealed.0 > 0,
        "the partitioned instance was probed"
    );
    assert_eq!(r.partitioned_sealed.1, 0, "sealed with a retired key");
    assert_eq!(r.sealed_with_retired, 0);
    for rot in &r.rotations {
        assert!(rot.adopted_after.is_some(), "{rot:?} never adopted");
    }
}

/// A quick profile target: `STATESEAL_SIM_N=1000 cargo test --release -p stateseal-sim --test fleet sized -- --ignored`.
#[test]
#[ignore = "by hand"]
fn sized_week() {
    let n = std::env::var("STATESEAL_SIM_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let r = run(&Scenario::fleet_week(n)).expect("run");
    println!("{}", table(std::slice::from_ref(&r)));
    println!("{:?}", r.refreshes);
}

/// The run counts the fleet only: the operator's creation of the keyset
/// before second 0 costs nothing in the figures.
#[test]
fn the_figures_count_the_fleet_not_the_setup() {
    let mut s = Scenario::capacity(
        1,
        stateseal_sim::StoreKind::Vault,
        stateseal_sim::KmsKind::Aws,
    );
    s.days = 0.01;
    s.restart_every = None;
    s.rounds_per_second = 0.0;
    let r = run(&s).expect("run");
    // One instance: its MAC key and its data key, one full read, no write.
    assert_eq!(r.kms_calls, 2, "{}", summary(&r));
    assert_eq!(r.full_reads, 1);
    assert_eq!(r.writes, 0);
}
