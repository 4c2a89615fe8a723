//! The simulation against a real fleet: N `http_server` processes on one
//! keyset in S3 under AWS KMS (both served by moto on loopback), rotating by
//! age for a few minutes, then the same scenario simulated. Compares what
//! moto served (store reads, full and not-modified, writes, KMS calls), the
//! rotations and the writes lost to another writer's compare-and-swap with
//! the simulation's figures; exits non-zero when they differ beyond the
//! stated tolerances.
//!
//! Two scenarios: `quiet` (the fleet alone) and `traffic` (two-round
//! conversations at 2 per second across the fleet, and rolling restarts).
//!
//! ```sh
//! scripts/calibrate-sim.sh                          # quiet: 24 instances, 180 s
//! scripts/calibrate-sim.sh --scenario traffic       # 12 instances, 180 s
//! scripts/calibrate-sim.sh --instances 40 --duration 600
//! ```

use std::time::Duration;
mod fleet;
mod real;
mod traffic;

use std::process::ExitCode;

use stateseal::rotation::Timing;
use stateseal_sim::{KmsKind, Report, Scenario, StoreKind, Topology, run};

/// The fleet's timing: R = 2 s, S = 1 s, T = 10 s (P = 1.1R + S rounded up).
const REFRESH: f64 = 2.0;
const SKEW: f64 = 1.0;
const TTL: f64 = 10.0;
/// Rotation by age: short enough for several rotations in a few minutes.
const ROTATION_PERIOD: f64 = 90.0;
/// The keyset is created this long before the fleet starts, as in the simulation.
const CREATED_BEFORE: f64 = 60.0;

/// What the fleet does besides refreshing and rotating.
#[derive(Debug, Clone, Copy)]
struct Load {
    name: &'static str,
    /// Conversations started per second across the fleet (0: none).
    rounds_per_second: f64,
    /// Rolling restarts: (every, window) seconds, as `Scenario::restart_every`
    /// and `restart_window`. The waves fall between the rotations (claimed
    /// about 30 s and 125 s in), so a kill never lands between a claim and
    /// its write: that delays a rotation by the claim's lifetime plus 4R, in
    /// the model and the real fleet alike, but only where a kill happens to
    /// land within the few milliseconds between the two, which the model
    /// cannot time as the real fleet does.
    restarts: Option<(f64, f64)>,
}

const QUIET: Load = Load {
    name: "quiet",
    rounds_per_second: 0.0,
    restarts: None,
};
const TRAFFIC: Load = Load {
    name: "traffic",
    rounds_per_second: 2.0,
    // Waves at 70 s and 140 s, each over 40 s.
    restarts: Some((70.0, 40.0)),
};

struct Args {
    cli: std::path::PathBuf,
    server: std::path::PathBuf,
    instances: usize,
    duration: f64,
    scenario: Load,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        cli: "target/debug/stateseal".into(),
        server: "target/debug/examples/http_server".into(),
        instances: 0,
        duration: 180.0,
        scenario: QUIET,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let number = |v: &str| {
            v.parse::<f64>()
                .map_err(|_| format!("{flag} {v:?}: a number"))
        };
        match flag.as_str() {
            "--cli" => args.cli = value.into(),
            "--server" => args.server = value.into(),
            "--instances" => args.instances = number(&value)? as usize,
            "--duration" => args.duration = number(&value)?,
            "--scenario" => {
                args.scenario = match value.as_str() {
                    "quiet" => QUIET,
                    "traffic" => TRAFFIC,
                    _ => return Err(format!("--scenario {value:?}: quiet or traffic")),
                }
            }
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    if args.instances == 0 {
        args.instances = if args.scenario.restarts.is_some() {
            12
        } else {
            24
        };
    }
    if !(2..=200).contains(&args.instances) {
        return Err("--instances must be between 2 and 200".into());
    }
    if !(120.0..=3600.0).contains(&args.duration) {
        return Err("--duration must be between 120 and 3600 seconds".into());
    }
    Ok(args)
}

/// What a fleet did, counted the same way for the real one and the model.
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    full_reads: u64,
    unchanged_reads: u64,
    writes: u64,
    copy_reads: u64,
    copy_writes: u64,
    kms_calls: u64,
    rotations: u64,
    /// Keyset writes lost to another writer's compare-and-swap.
    lost_writes: u64,
    /// Second rounds answered (verified or rejected), and those rejected.
    rounds: u64,
    rejected: u64,
    /// Calls no instance answered as expected (real fleet only).
    unanswered: u64,
}

fn simulated(args: &Args, measured: &real::Measured) -> Result<(Counts, Report), String> {
    let mut s = Scenario::capacity(args.instances, StoreKind::S3, KmsKind::Aws);
    s.days = args.duration / 86_400.0;
    s.timing = Timing::new(
        Duration::from_secs_f64(REFRESH),
        Duration::from_secs_f64(SKEW),
        Duration::from_secs_f64(TTL),
    );
    s.rotation_period = ROTATION_PERIOD;
    s.restart_every = args.scenario.restarts.map(|(every, _)| every);
    s.restart_window = args.scenario.restarts.map_or(0.0, |(_, window)| window);
    if let Some(downtime) = measured.downtime {
        s.restart_downtime = downtime;
    }
    s.rounds_per_second = args.scenario.rounds_per_second;
    s.start_spread = measured.spread;
    // On loopback, moto answers in milliseconds, not a cloud's tens of them.
    s.store.latency = measured.latency;
    s.kms.latency = measured.latency;
    // The real fleet: servers that write (rotation_period in their
    // configuration), on one machine's clock, ready_timeout 30 s.
    s.topology = Topology::Servers;
    s.clock_skew = 0.0;
    s.ready_timeout = 30.0;
    let r = run(&s).map_err(|e| format!("simulation: {e}"))?;
    let counts = Counts {
        full_reads: r.full_reads,
        unchanged_reads: r.unchanged_reads,
        writes: r.writes,
        copy_reads: r.newest_copy.0,
        copy_writes: r.newest_copy.1,
        kms_calls: r.kms_calls,
        rotations: r.rotations.len() as u64,
        lost_writes: r.writes_conflicted,
        rounds: r.rounds,
        rejected: r.rejected_rounds,
        unanswered: 0,
    };
    Ok((counts, r))
}

/// `|real - model| <= abs + rel * real`.
fn within(real: u64, model: u64, rel: f64, abs: u64) -> bool {
    (real as f64 - model as f64).abs() <= abs as f64 + rel * real as f64
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("usage error: {e}");
            return ExitCode::from(2);
        }
    };
    let (real, measured) = match real::run(&args) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("calibration failed: {e}");
            return ExitCode::from(1);
        }
    };
    let (model, report) = match simulated(&args, &measured) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("calibration failed: {e}");
            return ExitCode::from(1);
        }
    };
    let rows: [(&str, u64, u64, f64, u64); 10] = [
        // Reads follow the jittered refresh interval: random in both.
        (
            "store reads, full",
            real.full_reads,
            model.full_reads,
            0.10,
            3,
        ),
        (
            "store reads, not modified",
            real.unchanged_reads,
            model.unchanged_reads,
            0.05,
            10,
        ),
        // Writes and KMS calls follow the rotations: nearly exact (a claim
        // lost to a race, or a rotation at the very end, may differ).
        ("store writes", real.writes, model.writes, 0.0, 1),
        (
            "newest copy reads",
            real.copy_reads,
            model.copy_reads,
            0.0,
            2,
        ),
        (
            "newest copy writes",
            real.copy_writes,
            model.copy_writes,
            0.0,
            1,
        ),
        ("KMS calls", real.kms_calls, model.kms_calls, 0.05, 3),
        ("rotations", real.rotations, model.rotations, 0.0, 0),
        // Lost races are rare and random in both: a claim race at a turn, a
        // rotation landing under a renewal.
        (
            "writes lost to another's compare-and-swap",
            real.lost_writes,
            model.lost_writes,
            0.0,
            2,
        ),
        // Conversations: a Poisson-like arrival in both.
        ("rounds answered", real.rounds, model.rounds, 0.15, 5),
        ("rounds rejected", real.rejected, model.rejected, 0.0, 0),
    ];
    println!(
        "{} scenario: {} instances, {} s, R = {REFRESH} s, rotation every {ROTATION_PERIOD} s, ready spread {:.1} s, moto latency {:.1} ms, {} conversations/s, restarts {}",
        args.scenario.name,
        args.instances,
        args.duration,
        measured.spread,
        measured.latency * 1e3,
        args.scenario.rounds_per_second,
        match (args.scenario.restarts, measured.downtime) {
            (Some((every, window)), Some(down)) =>
                format!("every {every} s over {window} s (down {down:.2} s each)"),
            _ => "none".into(),
        }
    );
    println!("| figure | real fleet (moto) | simulation | agree |\n|---|---:|---:|---|");
    let mut agree = true;
    for (name, r, m, rel, abs) in rows {
        let ok = within(r, m, rel, abs);
        agree &= ok;
        println!(
            "| {name} | {r} | {m} | {} (±{abs} ±{:.0}%) |",
            if ok { "yes" } else { "NO" },
            rel * 100.0
        );
    }
    println!(
        "simulated KMS calls per rotation (max): {}; adoption: {:.1} s; rotations written at {:?} s",
        report.kms_per_rotation(),
        report.adoption_s(),
        report
            .rotations
            .iter()
            .map(|r| r.written_at.round())
            .collect::<Vec<_>>()
    );
    if real.unanswered > 0 {
        println!(
            "{} calls of the real traffic went unanswered",
            real.unanswered
        );
        agree = false;
    }
    if agree {
        println!("the simulation agrees with the real fleet");
        ExitCode::SUCCESS
    } else {
        // What the real fleet's servers said, with the kills, in time order.
        for line in &measured.timeline {
            println!("  {line}");
        }
        println!("the simulation DISAGREES with the real fleet");
        ExitCode::from(1)
    }
}
