//! `stateseal simulate`: the fleet simulation's capacity table for an
//! operator's own fleet size, store and KMS.

use std::io::Write;

use clap::Args;
use stateseal::rotation::Timing;
use stateseal_sim::{KmsKind, Scenario, StoreKind, run, table};

use crate::error::CliError;
use crate::token::parse_seconds;

/// Options of `stateseal simulate`.
#[derive(Debug, Args)]
#[command(
    after_help = "Simulates one day of a fleet running stateseal's real scheduler on a \
virtual clock: a rotation by age (servers claim it), a rolling restart, traffic verified on \
random instances; store and KMS models with their write limits, quotas and latency.\n\n\
Examples:\n  stateseal simulate --instances 1000 --store gcs --kms gcp\n  \
stateseal simulate --instances 100,1000,10000 --store s3 --kms aws --json"
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
    /// Servers rotate the keyset at this age, in seconds [default: 43200].
    #[arg(long, value_parser = parse_seconds, value_name = "SECS")]
    rotation_period: Option<f64>,
    /// R: how often instances refresh, in seconds [default: 30].
    #[arg(long, value_parser = parse_seconds, value_name = "SECS")]
    refresh_interval: Option<f64>,
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
        let report = run(&s).map_err(|e| CliError::Usage(e.to_string()))?;
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
