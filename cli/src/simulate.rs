//! `stateseal simulate`: the fleet simulation's capacity table (or its JSON
//! figures) for an operator's own fleet size, store, KMS, quota, clocks and
//! topology.

use std::io::Write;
use std::time::Duration;

use clap::Args;
use stateseal::rotation::Timing;
use stateseal_sim::{KmsKind, Scenario, StoreKind, Topology, run, table};

use crate::error::CliError;
use crate::flag_values::{parse_duration, parse_seconds};

/// Options of `stateseal simulate`.
#[derive(Debug, Args)]
#[command(
    after_help = "Simulates one day of a fleet running stateseal's real scheduler, each \
instance on its own clock: a cold start of the whole fleet (servers exit at ready_timeout, \
10 s, and restart with Kubernetes' CrashLoopBackOff), a rotation by age, a rolling restart, \
traffic verified on random instances. By default in deploy/'s topology: read-only servers \
and an hourly `stateseal rotate --if-due` job. Store and KMS models with the providers' \
documented limits (answered as the service answers, retried as the client retries) and \
latency; every request is its own instant, so reads and compare-and-swaps race.\n\n\
Examples:\n  stateseal simulate --instances 1000 --store gcs --kms gcp\n  \
stateseal simulate --instances 100,1000,10000 --store s3 --kms aws --json\n  \
stateseal simulate --instances 10000 --store gcs --kms gcp --kms-quota 5000 --start-spread 30"
)]
pub(crate) struct SimulateArgs {
    /// Fleet sizes, one table row each.
    #[arg(long, value_delimiter = ',', required = true)]
    instances: Vec<usize>,
    /// Where the keyset lives: gcs, s3 or vault.
    #[arg(long, value_parser = parse_store)]
    store: StoreKind,
    /// Which KMS holds the KEK: aws, gcp or vault.
    #[arg(long, value_parser = parse_kms)]
    kms: KmsKind,
    /// The KMS requests per second the fleet may make [default: the
    /// provider's documented quota: aws 10000, gcp 1000 (60,000 a minute,
    /// enforced per second), vault 5000].
    #[arg(long = "kms-quota", value_parser = parse_quota, value_name = "PER_S")]
    kms_quota: Option<u64>,
    /// The largest difference between two instances' clocks, in seconds
    /// (each is off by up to half of it) [default: S, 60].
    #[arg(long = "clock-skew", value_parser = parse_span, value_name = "SECS")]
    clock_skew: Option<f64>,
    /// A cold start brings the whole fleet up within this many seconds [default: 5].
    #[arg(long = "start-spread", value_parser = parse_span, value_name = "SECS")]
    start_spread: Option<f64>,
    /// Who writes the keyset: rotator (deploy/'s read-only servers and hourly
    /// `rotate --if-due` job) or servers (each may claim and rotate).
    #[arg(long, value_parser = parse_topology, default_value = "rotator")]
    topology: Topology,
    /// The first N instances (or rotator job runs) to call the KMS for a new
    /// data key are denied it, ever after.
    #[arg(long = "failing-rotators", value_parser = parse_count, value_name = "N", default_value = "0")]
    failing_rotators: usize,
    /// The primary is due for rotation at this age, in seconds [default: 43200].
    #[arg(long, value_parser = parse_seconds, value_name = "SECS")]
    rotation_period: Option<f64>,
    /// R: how often instances refresh, in seconds [default: 30].
    #[arg(long, value_parser = parse_duration, value_name = "SECS")]
    refresh_interval: Option<Duration>,
    /// Simulated days [default: 1].
    #[arg(long, value_parser = parse_seconds, value_name = "DAYS")]
    days: Option<f64>,
    /// One JSON object per fleet size instead of the table.
    #[arg(long)]
    json: bool,
}

fn parse_store(s: &str) -> Result<StoreKind, String> {
    s.parse().map_err(|e: stateseal::Error| e.to_string())
}

fn parse_kms(s: &str) -> Result<KmsKind, String> {
    s.parse().map_err(|e: stateseal::Error| e.to_string())
}

fn parse_topology(s: &str) -> Result<Topology, String> {
    s.parse()
        .map_err(|_| format!("expected rotator or servers, got {s:?}"))
}

fn parse_quota(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(n) if (1..=1_000_000_000).contains(&n) => Ok(n),
        _ => Err(format!(
            "expected a whole number of requests per second from 1 to 1000000000, got {s:?}"
        )),
    }
}

fn parse_span(s: &str) -> Result<f64, String> {
    match parse_seconds(s) {
        Ok(v) if v <= 86_400.0 => Ok(v),
        _ => Err(format!(
            "expected a number of seconds from 0 to 86400, got {s:?}"
        )),
    }
}

fn parse_count(s: &str) -> Result<usize, String> {
    s.parse::<usize>()
        .map_err(|_| format!("expected a whole number of instances, got {s:?}"))
}

/// Runs the simulation for every size and prints the table (or JSON lines).
pub(crate) fn run_simulate(args: &SimulateArgs, out: &mut impl Write) -> Result<(), CliError> {
    let mut reports = Vec::new();
    for &n in &args.instances {
        let mut s = Scenario::capacity(n, args.store, args.kms);
        if let Some(r) = args.refresh_interval {
            s.timing = Timing::new(r, s.timing.max_skew, s.timing.ttl);
        }
        if let Some(p) = args.rotation_period {
            s.rotation_period = p;
        }
        if let Some(d) = args.days {
            s.days = d;
        }
        if let Some(q) = args.kms_quota {
            s.kms.quota_per_s = q;
        }
        if let Some(skew) = args.clock_skew {
            s.clock_skew = skew;
        }
        if let Some(spread) = args.start_spread {
            s.start_spread = spread;
        }
        s.topology = args.topology;
        s.failing_rotators = args.failing_rotators;
        // The simulated servers' own warnings (thousands in a throttled cold
        // start) are the run's figures, not this command's output.
        let report =
            tracing::subscriber::with_default(tracing::subscriber::NoSubscriber::default(), || {
                run(&s)
            })
            .map_err(|e| CliError::Usage(e.to_string()))?;
        if args.json {
            writeln!(out, "{}", report.to_json()).map_err(io)?;
        }
        reports.push(report);
    }
    if !args.json {
        write!(out, "{}", table(&reports)).map_err(io)?;
    }
    Ok(())
}

fn io(e: std::io::Error) -> CliError {
    CliError::Failed(format!("cannot write the output: {e}"))
}
