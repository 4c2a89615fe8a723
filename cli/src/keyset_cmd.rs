//! `stateseal init | rotate | status`: operate a shared keyset.

use std::io::{IsTerminal, Write};
use std::sync::Arc;

use clap::Args;
use stateseal::keyset::format_rfc3339;
use stateseal::rotation::{
    Phase, RotateMode, SchedulerConfig, SchedulerStatus, Timing, init_keyset, next_change_after,
    ring_at, rotate_store_at,
};
use stateseal::{
    Clock, Keyset, KeysetStore, LocalProvider, ManualClock, ProviderRegistry, RingHandle,
    RotationScheduler, SystemClock,
};

use crate::error::CliError;
use crate::token::parse_seconds;

/// The registry the CLI resolves KEK and store URIs with: the embedded
/// `local`/`file` plus every provider crate, configured from the environment
/// (a provider's configuration error surfaces only when a URI names it).
pub(crate) fn registry() -> ProviderRegistry {
    let mut registry = ProviderRegistry::with_defaults();
    // Operators create and inspect local-KEK keysets for development with the CLI.
    registry.allow_local_kek();
    stateseal_vault::register(&mut registry, stateseal_vault::VaultConfig::from_env());
    stateseal_aws_kms::register(&mut registry, stateseal_aws_kms::AwsConfig::default());
    stateseal_gcp_kms::register(&mut registry, stateseal_gcp_kms::GcpKmsConfig::from_env());
    registry
}

/// Timing flags shared by `rotate` and `status` (they must match the fleet's).
#[derive(Debug, Args, Clone)]
pub(crate) struct TimingArgs {
    /// R: seconds between keyset refreshes on the servers.
    #[arg(long = "refresh-interval", default_value = "30", value_parser = parse_seconds)]
    refresh: f64,
    /// S: the largest clock difference between servers, in seconds.
    #[arg(long = "max-skew", default_value = "60", value_parser = parse_seconds)]
    skew: f64,
    /// T: state lifetime in seconds.
    #[arg(long = "state-ttl", default_value = "600", value_parser = parse_seconds)]
    ttl: f64,
    /// P: seconds a new key is known before it seals (default 2R + S).
    #[arg(long, value_parser = parse_seconds)]
    propagation: Option<f64>,
}

impl TimingArgs {
    pub(crate) fn timing(&self) -> Result<Timing, CliError> {
        let mut t = Timing::new(self.refresh, self.skew, self.ttl);
        if let Some(p) = self.propagation {
            t = t.with_propagation(p);
        }
        t.validate().map_err(|e| CliError::Usage(e.to_string()))?;
        Ok(t)
    }
}

#[derive(Debug, Args)]
pub(crate) struct InitArgs {
    /// KEK URI: local://PATH (created with mode 0600 if absent), or a provider's URI.
    #[arg(long)]
    kek: String,
    /// Keyset store URI, e.g. file:///var/lib/stateseal/keyset.json.
    #[arg(long)]
    store: String,
    /// Unix time in seconds (fraction allowed); default: now.
    #[arg(long, value_parser = parse_seconds)]
    now: Option<f64>,
    /// One JSON object on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct RotateArgs {
    /// Keyset store URI.
    #[arg(long)]
    store: String,
    /// Rotate even while a rotation is in flight (the timeline is extended safely).
    #[arg(long, conflicts_with = "now_compromise")]
    force: bool,
    /// Key compromise: the new key seals at once and every other key retires now.
    #[arg(long = "now-compromise")]
    now_compromise: bool,
    /// Unix time in seconds (fraction allowed); default: now.
    #[arg(long, value_parser = parse_seconds)]
    now: Option<f64>,
    #[command(flatten)]
    timing: TimingArgs,
    /// One JSON object on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    /// Keyset store URI.
    #[arg(long)]
    store: String,
    /// One JSON object on stdout.
    #[arg(long)]
    json: bool,
    /// Unix time in seconds (fraction allowed); default: now.
    #[arg(long, value_parser = parse_seconds)]
    now: Option<f64>,
}

fn open_store(uri: &str) -> Result<Arc<dyn KeysetStore>, CliError> {
    registry()
        .open_store(uri)
        .map_err(|e| CliError::Usage(format!("--store: {e}")))
}

async fn load(store: &dyn KeysetStore) -> Result<Keyset, CliError> {
    store.load().await.map_err(CliError::from)?.ok_or_else(|| {
        CliError::Usage(format!(
            "no keyset at {}; create one with `stateseal init --kek URI --store {}`",
            store.uri(),
            store.uri()
        ))
    })
}

pub(crate) async fn init(a: InitArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let now = a.now.unwrap_or_else(|| SystemClock.now());
    let store = open_store(&a.store)?;
    let registry = registry();
    registry
        .provider_for(&a.kek)
        .map_err(|e| CliError::Usage(format!("--kek: {e}")))?;
    if a.kek.starts_with("local://") {
        let path =
            LocalProvider::kek_path(&a.kek).map_err(|e| CliError::Usage(format!("--kek: {e}")))?;
        if !path.exists() {
            LocalProvider::create_kek(path).map_err(|e| CliError::Usage(format!("--kek: {e}")))?;
            eprintln!(
                "created KEK file {} (mode 0600; the local provider is for development only)",
                path.display()
            );
        }
    }
    let doc = init_keyset(store.as_ref(), &registry, &a.kek, now)
        .await
        .map_err(|e| match e {
            stateseal::Error::Conflict { .. } => CliError::Rejected(format!(
                "{} already holds a keyset; use `stateseal rotate`",
                store.uri()
            )),
            other => CliError::from(other),
        })?;
    let ring = ring_of(store.clone(), now).await?;
    let kid = ring.first().cloned().unwrap_or_default();
    if a.json {
        writeln!(out, "{}", serde_json::json!({"keyset": doc.id, "generation": doc.generation, "primary": kid, "store": store.uri()}))
    } else {
        writeln!(out, "created keyset {} in {} with key {kid} (active now)", doc.id, store.uri())
    }
    .map_err(io)
}

fn io(e: std::io::Error) -> CliError {
    CliError::Failed(format!("writing output: {e}"))
}

pub(crate) async fn rotate(a: RotateArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let now = a.now.unwrap_or_else(|| SystemClock.now());
    let store = open_store(&a.store)?;
    let config = SchedulerConfig::default().timing(a.timing.timing()?);
    let mode = if a.now_compromise {
        RotateMode::Compromise
    } else if a.force {
        RotateMode::Forced
    } else {
        RotateMode::Scheduled
    };
    let doc = rotate_store_at(store.as_ref(), &registry(), &config, now, mode).await.map_err(|e| match e {
        stateseal::Error::RotationInFlight(why) => {
            CliError::Rejected(format!("rotation refused: {why}; run `stateseal status` to see when it completes, or pass --force"))
        }
        stateseal::Error::Conflict { .. } => CliError::Rejected(format!(
            "rotation refused: {e}; another rotation landed first, run `stateseal status`"
        )),
        other => CliError::from(other),
    })?;
    let new = doc
        .keys
        .last()
        .ok_or_else(|| CliError::Failed("rotated keyset has no keys".into()))?;
    if a.json {
        return writeln!(
            out,
            "{}",
            serde_json::json!({"generation": doc.generation, "entry": new.entry, "activate_at": new.activate_at,
                "retire_previous_at": doc.keys.iter().filter_map(|k| k.retire_at).fold(f64::NEG_INFINITY, f64::max)})
        )
        .map_err(io);
    }
    if mode == RotateMode::Compromise {
        writeln!(
            out,
            "emergency rotation: the new key seals now and every other key is retired.\n\
             This breaks: every state sealed before now (clients must start those conversations again), and\n\
             states sealed by servers that have not refreshed yet (up to {}s) with the old key.",
            config.timing.refresh_interval
        )
        .map_err(io)?;
    } else {
        let retire = doc
            .keys
            .iter()
            .filter_map(|k| k.retire_at)
            .fold(f64::NEG_INFINITY, f64::max);
        writeln!(
            out,
            "rotation written (generation {}): new key {} seals from {} (in {}); the previous key unseals until {} (in {})",
            doc.generation,
            new.entry,
            format_rfc3339(new.activate_at),
            human(new.activate_at - now),
            format_rfc3339(retire),
            human(retire - now)
        )
        .map_err(io)?;
    }
    Ok(())
}

/// Key ids (hex) of the ring at `now`, primary first, unwrapping through the registry.
pub(crate) async fn ring_of(
    store: Arc<dyn KeysetStore>,
    now: f64,
) -> Result<Vec<String>, CliError> {
    let (_, status) = load_ring(store, now).await.map_err(CliError::from)?;
    Ok(status.ring)
}

/// A ring for `token mint|verify --keyset`: exactly what a server would hold at `now`.
pub(crate) async fn ring_handle_from_store(
    uri: &str,
    now: f64,
) -> Result<Arc<RingHandle>, CliError> {
    let store = registry()
        .open_store(uri)
        .map_err(|e| CliError::Usage(format!("--keyset: {e}")))?;
    let (ring, _) = load_ring(store, now)
        .await
        .map_err(|e| CliError::Usage(format!("--keyset: {e}")))?;
    Ok(ring)
}

/// Loads the ring a server would hold at `now` (one scheduler refresh, no background task).
async fn load_ring(
    store: Arc<dyn KeysetStore>,
    now: f64,
) -> Result<(Arc<RingHandle>, SchedulerStatus), stateseal::Error> {
    let ring = Arc::new(RingHandle::empty());
    // An inspection never writes: no automatic rotation, no seal reservations.
    let sched = RotationScheduler::new(
        SchedulerConfig::default()
            .rotation_period(None)
            .seal_reservation_block(None),
        store,
        registry(),
        ring.clone(),
        Arc::new(ManualClock::new(now)),
    )?;
    let status = sched.refresh_at(now).await?;
    Ok((ring, status))
}

/// "1m 40s", "2h 5m", "3d 4h", "now".
pub(crate) fn human(secs: f64) -> String {
    let s = secs.abs().round() as u64;
    let text = match s {
        0 => return "now".into(),
        1..=59 => format!("{s}s"),
        60..=3599 => format!("{}m {}s", s / 60, s % 60),
        3600..=86_399 => format!("{}h {}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d {}h", s / 86_400, (s % 86_400) / 3600),
    };
    if secs < 0.0 {
        format!("{text} ago")
    } else {
        text
    }
}

pub(crate) async fn status(a: StatusArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let now = a.now.unwrap_or_else(|| SystemClock.now());
    let store = open_store(&a.store)?;
    let doc = load(store.as_ref()).await?;
    let plan = ring_at(&doc, now).ok_or_else(|| {
        CliError::Rejected(
            "every key in the keyset has retired; run `stateseal rotate --force`".into(),
        )
    })?;
    // Key ids need the unwrapped keys: ask the KMS once per key, as a server would.
    let kids = ring_of(store.clone(), now).await?;
    let kid_of = |entry: &str| {
        plan.ring
            .iter()
            .position(|e| e == entry)
            .and_then(|i| kids.get(i))
            .cloned()
    };
    let next = next_change_after(&doc, now);
    if a.json {
        let keys: Vec<_> = doc
            .keys
            .iter()
            .map(|k| {
                let role = if k.entry == plan.primary {
                    "primary"
                } else if plan.ring.contains(&k.entry) {
                    if k.activate_at > now { "pending" } else { "unseal-only" }
                } else {
                    "retired"
                };
                serde_json::json!({"entry": k.entry, "kid": kid_of(&k.entry), "kek": k.kek, "activate_at": k.activate_at,
                    "retire_at": k.retire_at, "role": role})
            })
            .collect();
        return writeln!(
            out,
            "{}",
            serde_json::json!({"keyset": doc.id, "generation": doc.generation, "now": now, "phase": plan.phase as u8,
                "primary": kids.first(), "ring": kids, "keys": keys,
                "next_change": next.map(|(at, phase)| serde_json::json!({"at": at, "phase": phase as u8}))})
        )
        .map_err(io);
    }
    let colour = std::io::stdout().is_terminal();
    let paint = |code: &str, s: &str| {
        if colour {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_owned()
        }
    };
    let phase_text = match plan.phase {
        Phase::One => "phase 1 [old, new]: a new key is propagating; the old key still seals",
        Phase::Two => "phase 2 [new, old]: the new key seals; older states still open",
        Phase::Three => "phase 3 [new]: one key, no rotation in flight",
    };
    writeln!(
        out,
        "keyset {} (generation {}) in {}",
        doc.id,
        doc.generation,
        store.uri()
    )
    .map_err(io)?;
    writeln!(out, "{}", paint("1", phase_text)).map_err(io)?;
    writeln!(
        out,
        "{:<10} {:<12} {:<40} {:<40} KEK",
        "KID", "ROLE", "ACTIVATES", "RETIRES"
    )
    .map_err(io)?;
    for k in &doc.keys {
        let (role, code) = if k.entry == plan.primary {
            ("primary", "32")
        } else if plan.ring.contains(&k.entry) {
            if k.activate_at > now {
                ("pending", "36")
            } else {
                ("unseal-only", "33")
            }
        } else {
            ("retired", "90")
        };
        let when = |t: f64| format!("{} ({})", format_rfc3339(t), human(t - now));
        writeln!(
            out,
            "{:<10} {:<12} {:<40} {:<40} {}",
            kid_of(&k.entry).unwrap_or_else(|| "-".into()),
            paint(code, role),
            when(k.activate_at),
            k.retire_at.map_or_else(|| "-".into(), when),
            k.kek
        )
        .map_err(io)?;
    }
    match next {
        Some((at, phase)) => writeln!(
            out,
            "next: phase {} in {} ({})",
            phase as u8,
            human(at - now),
            format_rfc3339(at)
        ),
        None => writeln!(
            out,
            "next: nothing scheduled; rotate with `stateseal rotate --store {}`",
            store.uri()
        ),
    }
    .map_err(io)
}
