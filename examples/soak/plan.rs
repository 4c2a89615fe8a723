//! What the soak does and when: its arguments and its schedule of events.

use std::path::PathBuf;

pub(crate) struct Args {
    pub(crate) duration: f64,
    pub(crate) json: bool,
    pub(crate) workers: usize,
    pub(crate) max_conversations: u64,
    pub(crate) cli: PathBuf,
    pub(crate) server: PathBuf,
    /// Prometheus, to scrape the servers with the alert rules loaded.
    pub(crate) prometheus: Option<PathBuf>,
}

pub(crate) fn parse_args() -> Result<Args, String> {
    // Binaries default to the ones built next to this example (target/<profile>/).
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let examples = exe.parent().ok_or("no exe dir")?.to_path_buf();
    let mut a = Args {
        duration: 60.0,
        json: false,
        workers: 8,
        max_conversations: 10_000_000,
        cli: examples.join("../stateseal"),
        server: examples.join("http_server"),
        prometheus: std::env::var_os("STATESEAL_PROMETHEUS").map(PathBuf::from),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--duration" => a.duration = val()?.parse().map_err(|e| format!("--duration: {e}"))?,
            "--workers" => a.workers = val()?.parse().map_err(|e| format!("--workers: {e}"))?,
            "--max-conversations" => {
                a.max_conversations = val()?
                    .parse()
                    .map_err(|e| format!("--max-conversations: {e}"))?;
            }
            "--cli" => a.cli = PathBuf::from(val()?),
            "--server" => a.server = PathBuf::from(val()?),
            "--prometheus" => a.prometheus = Some(PathBuf::from(val()?)),
            "--json" => a.json = true,
            _ => return Err(format!("unknown argument {flag}")),
        }
    }
    if a.duration.is_nan() || a.duration < 30.0 || a.workers == 0 || a.workers > 256 {
        return Err("--duration must be >= 30 s and --workers 1..=256".into());
    }
    Ok(a)
}

#[derive(Debug)]
pub(crate) enum Event {
    Rotate,
    KillRestart(usize),
    VaultOutage(f64),
    StoreFlap,
    GarbageDocument,
    OlderGeneration,
    RotateSecretId,
}

/// The process that logs in with AppRole (the others use the fleet's token).
pub(crate) const APPROLE_SERVER: usize = 2;

/// When things happen, as (seconds from start, event).
pub(crate) fn schedule(d: f64) -> Vec<(f64, Event)> {
    // Long enough for the time-scaled refresh-failing alert to fire (R = 1 s).
    let outage_at = 0.5 * d;
    let outage = (0.12 * d).clamp(8.0, 20.0);
    let rotations = ((d / 100.0).floor() as usize).max(3);
    let mut events: Vec<(f64, Event)> = (0..rotations)
        .map(|k| {
            let mut t = (k as f64 + 0.5) * 0.9 * d / rotations as f64;
            if (outage_at - 2.0..outage_at + outage + 3.0).contains(&t) {
                t = outage_at + outage + 3.0;
            }
            (t, Event::Rotate)
        })
        .collect();
    events.push((0.3 * d, Event::KillRestart(1)));
    events.push((outage_at, Event::VaultOutage(outage)));
    events.push((0.18 * d, Event::StoreFlap));
    events.push((0.38 * d, Event::GarbageDocument));
    events.push((0.68 * d, Event::OlderGeneration));
    events.push((0.8 * d, Event::RotateSecretId));
    events.sort_by(|a, b| a.0.total_cmp(&b.0));
    events
}
