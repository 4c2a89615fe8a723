//! `stateseal demo`: a fleet of rmcp HTTP servers sharing one keyset, MCP
//! clients holding multi-round conversations across random instances, a
//! three-phase rotation under live traffic (timings scaled down so it passes in
//! under a minute), and attacks that must all be rejected.

mod bearer_auth;
mod confirming;
mod fleet;
mod routes;

use std::collections::BTreeSet;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use clap::Args;
use rmcp::model::*;
use serde_json::json;
use stateseal::rotation::{
    DEFAULT_MAX_LIVE_KEYS, KeysetTrust, Phase, RotateMode, describe_keyset, revoke, rotate_keyset,
};
use stateseal::setup::Config;
use stateseal::{Clock, LocalProvider, Principal, Revocation, SystemClock};

use crate::error::CliError;
use crate::flag_values::parse_seconds;
use crate::keyset::{load_verified, registry};
use fleet::{REPLAY_STORE, answered, deploy, launch, rejected, transfer};

/// Options of `stateseal demo`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  stateseal demo\n  stateseal demo --instances 5 --duration 60 --json"
)]
pub(crate) struct DemoArgs {
    /// Server instances sharing the keyset.
    #[arg(long, default_value_t = 3)]
    instances: usize,
    /// How long to run, in seconds (at least 26: a rotation's three phases take 23).
    #[arg(long, default_value = "35", value_parser = parse_seconds)]
    duration: f64,
    /// KEK URI (default: a local KEK in a temporary directory).
    #[arg(long)]
    kek: Option<String>,
    /// Keyset store URI (default: a file store in a temporary directory).
    #[arg(long)]
    store: Option<String>,
    /// Print the summary as one JSON object on the last line.
    #[arg(long)]
    json: bool,
}

pub(super) const USERS: [&str; 2] = ["alice", "bob"];

/// When the demo writes its rotation, and the shortest run that sees all three
/// phases after it: rotation at 4 s, phase 2 at 4 + P = 7 s, phase 3 at
/// 7 + P + T + S = 23 s (P = 3, T = 12, S = 1), plus refresh and margin.
const ROTATE_AFTER: f64 = 4.0;
/// When the demo revokes bob's states issued so far (one held state of his
/// must then be refused), and how long after it that state comes back: past
/// one refresh R = 1 s and its jitter.
const REVOKE_AFTER: f64 = 8.0;
const REVOKED_REPLAY_AFTER: Duration = Duration::from_millis(2500);
const MIN_DURATION: f64 = 26.0;

pub(super) fn fail(what: &str) -> impl Fn(String) -> CliError + '_ {
    move |e| CliError::Failed(format!("demo: {what}: {e}"))
}

/// A small xorshift generator: the demo's choices need no cryptographic randomness.
struct Pick(u64);

impl Pick {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

#[derive(Default)]
struct Tally {
    rounds: u64,
    unexpected: u64,
    attacks: u64,
    attacks_rejected: u64,
    /// Of the attacks: single-use transfers presented a second time.
    replays: u64,
    /// Of the attacks: states presented after their principal was revoked.
    revoked: u64,
}

pub(crate) async fn run(args: DemoArgs, out: &mut dyn Write) -> Result<(), CliError> {
    if args.instances == 0 || args.instances > 16 {
        return Err(CliError::Usage(
            "--instances must be between 1 and 16".into(),
        ));
    }
    if args.duration < MIN_DURATION {
        return Err(CliError::Usage(format!(
            "--duration must be at least {MIN_DURATION} seconds: the demo's rotation needs that long to pass all three phases"
        )));
    }
    let tmp = std::env::temp_dir().join(format!("stateseal-demo-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(|e| fail("temp dir")(e.to_string()))?;
    let store = args
        .store
        .clone()
        .unwrap_or_else(|| format!("file://{}", tmp.join("keyset.json").display()));
    let kek = match &args.kek {
        Some(k) => k.clone(),
        None => {
            let path = tmp.join("kek.bin");
            if !path.exists() {
                LocalProvider::create_kek(&path).map_err(|e| fail("KEK")(e.to_string()))?;
            }
            format!("local://{}", path.display())
        }
    };
    // Scaled-down timeline: R = 1 s, S = 1 s, T = 12 s, P = 2R + S = 3 s.
    let config = Config::builder(&store, "stateseal-demo")
        .kek(Some(kek.clone()))
        .create_if_missing(true)
        .ttl(Duration::from_secs(12))
        .refresh_interval(Duration::from_secs(1))
        .max_skew(Duration::from_secs(1))
        .rotation_period(None)
        .ready_timeout(Duration::from_secs(10))
        .replay_store(Some(REPLAY_STORE.to_owned()))
        .single_use_tools(vec!["transfer".to_owned()])
        .build()
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let fleet = launch(&config, args.instances).await?;
    let store_handle = registry(&store)
        .open_store(&store)
        .map_err(|e| CliError::Usage(format!("--store: {e}")))?;
    let trust = KeysetTrust::new(config.trust_policy().map_err(CliError::from)?);
    let registry = registry(&store);
    let colour = std::io::stdout().is_terminal() && !args.json;
    // With --json, stdout is the one summary object (`stateseal demo --json | jq`);
    // progress goes to stderr.
    let mut stderr = std::io::stderr();
    let progress: &mut dyn Write = if args.json { &mut stderr } else { &mut *out };
    let io = |e: std::io::Error| CliError::Failed(format!("writing output: {e}"));
    writeln!(
        progress,
        "stateseal demo: {} instances, keyset {store}",
        args.instances
    )
    .map_err(io)?;

    let started = Instant::now();
    let mut pick = Pick(0x9e37_79b9_7f4a_7c15 ^ u64::from(std::process::id()));
    let mut tally = Tally::default();
    let mut phases = BTreeSet::new();
    let mut rotated = false;
    // bob's state minted before his revocation, and when to present it.
    let mut revocation: Option<(Instant, String, &str)> = None;
    let mut revoked_written = false;
    // Tokens kept to replay after expiry: (when, token, user, arguments).
    let mut held: Vec<(Instant, String, usize, &str)> = Vec::new();
    let mut last_report = Instant::now() - Duration::from_secs(1);
    while started.elapsed().as_secs_f64() < args.duration {
        let now = SystemClock.now();
        // Only phases after the demo's own rotation count: the keyset starts in phase 3.
        if rotated {
            let v = load_verified(
                store_handle.as_ref(),
                &registry,
                &trust,
                Some(now.as_secs_f64()),
            )
            .await?;
            if let Some(phase) = describe_keyset(&v.doc, now).phase {
                phases.insert(phase as u8);
            }
        }
        if !rotated && started.elapsed().as_secs_f64() > ROTATE_AFTER {
            // The demo's own scaled-down timeline, whatever profile the keyset was created with.
            rotate_keyset(
                store_handle.as_ref(),
                &registry,
                &trust,
                Some(config.scheduler_config().timing),
                now,
                RotateMode::Scheduled,
                DEFAULT_MAX_LIVE_KEYS,
            )
            .await
            .map_err(CliError::from)?;
            rotated = true;
            writeln!(progress, "  -> rotation written: new key propagates for 3 s, then seals; the old key retires 16 s later").map_err(io)?;
        }
        if !revoked_written && started.elapsed().as_secs_f64() > REVOKE_AFTER {
            // bob's states issued until now are revoked fleet-wide, no rotation:
            // one he holds must be refused once the instances have refreshed.
            let env = "staging";
            if let Ok(CallToolResponse::InputRequired(r)) =
                fleet.clients[1][0].call_tool_once(deploy(env)).await
            {
                let bob = Principal::from_components(
                    "example-client",
                    Some("https://auth.example"),
                    Some("bob"),
                );
                revoke(
                    store_handle.as_ref(),
                    &registry,
                    &trust,
                    Revocation::principal(&bob, SystemClock.now()),
                    SystemClock.now(),
                )
                .await
                .map_err(CliError::from)?;
                revocation = Some((
                    Instant::now() + REVOKED_REPLAY_AFTER,
                    r.request_state.unwrap_or_default(),
                    env,
                ));
                writeln!(progress, "  -> revocation written: bob's states issued until now are refused on every instance within R = 1 s; his new ones verify").map_err(io)?;
            }
            revoked_written = true;
        }
        if let Some((_, token, env)) = revocation.take_if(|(due, ..)| Instant::now() >= *due) {
            tally.attacks += 1;
            tally.revoked += 1;
            let r = fleet.clients[1][pick.below(args.instances)]
                .call_tool_once(answered(deploy(env), &token))
                .await;
            tally.attacks_rejected += u64::from(rejected(&r));
        }
        // One conversation: round 1 and round 2 on random instances, as one user.
        let user = pick.below(USERS.len());
        let env = ["prod", "staging", "dev"][pick.below(3)];
        let (a, b) = (pick.below(args.instances), pick.below(args.instances));
        let first = fleet.clients[user][a].call_tool_once(deploy(env)).await;
        let token = match first {
            Ok(CallToolResponse::InputRequired(r)) => r.request_state.unwrap_or_default(),
            other => {
                tally.unexpected += 1;
                writeln!(progress, "  unexpected answer to round 1: {other:?}").map_err(io)?;
                continue;
            }
        };
        match fleet.clients[user][b]
            .call_tool_once(answered(deploy(env), &token))
            .await
        {
            Ok(CallToolResponse::Complete(_)) => tally.rounds += 2,
            other => {
                tally.unexpected += 1;
                writeln!(progress, "  valid round rejected: {other:?}").map_err(io)?;
            }
        }
        // Attacks, each on a random instance: tampered, replayed to other arguments, another user's state.
        let mid = token.len() / 2;
        let tampered = format!(
            "{}{}{}",
            &token[..mid],
            if &token[mid..=mid] == "A" { "B" } else { "A" },
            &token[mid + 1..]
        );
        let other_env = if env == "prod" { "dev" } else { "prod" };
        let other_user = (user + 1) % USERS.len();
        for (who, params) in [
            (user, answered(deploy(env), &tampered)),
            (user, answered(deploy(other_env), &token)),
            (other_user, answered(deploy(env), &token)),
        ] {
            tally.attacks += 1;
            let r = fleet.clients[who][pick.below(args.instances)]
                .call_tool_once(params)
                .await;
            tally.attacks_rejected += u64::from(rejected(&r));
        }
        // A single-use transfer: confirmed once on one instance, its replay on
        // another refused (the fleet shares one replay store).
        if pick.below(4) == 0 {
            let amount = 1 + pick.below(100) as u32;
            let first = fleet.clients[user][a]
                .call_tool_once(transfer(amount))
                .await;
            if let Ok(CallToolResponse::InputRequired(r)) = first {
                let once = r.request_state.unwrap_or_default();
                match fleet.clients[user][b]
                    .call_tool_once(answered(transfer(amount), &once))
                    .await
                {
                    Ok(CallToolResponse::Complete(_)) => tally.rounds += 2,
                    other => {
                        tally.unexpected += 1;
                        writeln!(progress, "  valid transfer rejected: {other:?}").map_err(io)?;
                    }
                }
                tally.attacks += 1;
                tally.replays += 1;
                let r = fleet.clients[user][pick.below(args.instances)]
                    .call_tool_once(answered(transfer(amount), &once))
                    .await;
                tally.attacks_rejected += u64::from(rejected(&r));
            } else {
                tally.unexpected += 1;
                writeln!(progress, "  unexpected answer to a transfer: {first:?}").map_err(io)?;
            }
        }
        // Expired: keep a token, replay it once it is past T + S, by the same user
        // with the same arguments: it differs from a valid round only in its time.
        if held.len() < 3 && pick.below(20) == 0 {
            held.push((Instant::now(), token.clone(), user, env));
        }
        let (due, waiting): (Vec<_>, Vec<_>) = held
            .drain(..)
            .partition(|(at, ..)| at.elapsed() > Duration::from_secs(14));
        held = waiting;
        for (_, old, who, env) in due {
            tally.attacks += 1;
            let r = fleet.clients[who][pick.below(args.instances)]
                .call_tool_once(answered(deploy(env), &old))
                .await;
            tally.attacks_rejected += u64::from(rejected(&r));
        }
        if last_report.elapsed() >= Duration::from_secs(1) {
            last_report = Instant::now();
            let now = SystemClock.now();
            let phase = load_verified(
                store_handle.as_ref(),
                &registry,
                &trust,
                Some(now.as_secs_f64()),
            )
            .await
            .ok()
            .and_then(|v| describe_keyset(&v.doc, now).phase)
            .map_or(0, |p| p as u8);
            let rings: Vec<String> = fleet
                .protections
                .iter()
                .map(|p| format!("[{}]", p.status().ring.join(",")))
                .collect();
            let line = format!(
                "{:>5.1}s phase {phase}  rings {}  rounds {}  unexpected {}  attacks {}/{} rejected",
                started.elapsed().as_secs_f64(),
                rings.join(" "),
                tally.rounds,
                tally.unexpected,
                tally.attacks_rejected,
                tally.attacks
            );
            let line = if colour {
                format!("\x1b[36m{line}\x1b[0m")
            } else {
                line
            };
            writeln!(progress, "{line}").map_err(io)?;
        }
    }
    for row in fleet.clients {
        for client in row {
            let _ = client.cancel().await;
        }
    }
    let phases_seen: Vec<u8> = phases.into_iter().collect();
    let ok = tally.unexpected == 0
        && tally.revoked == 1
        && tally.attacks == tally.attacks_rejected
        && phases_seen == [Phase::One as u8, 2, 3];
    writeln!(
        progress,
        "summary: {} rounds, {} unexpected rejections, {}/{} attacks rejected ({} replayed single-use transfers and {} revoked states among them), phases seen {:?}: {}",
        tally.rounds,
        tally.unexpected,
        tally.attacks_rejected,
        tally.attacks,
        tally.replays,
        tally.revoked,
        phases_seen,
        if ok { "OK" } else { "FAILED" }
    )
    .map_err(io)?;
    if args.json {
        writeln!(
            out,
            "{}",
            json!({"rounds": tally.rounds, "unexpected_rejections": tally.unexpected, "attacks": tally.attacks,
                "attacks_rejected": tally.attacks_rejected, "replays": tally.replays, "revoked": tally.revoked, "phases_seen": phases_seen, "instances": args.instances,
                "duration_s": started.elapsed().as_secs_f64().round()})
        )
        .map_err(io)?;
    }
    drop(fleet.protections);
    if args.store.is_none() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    if ok {
        Ok(())
    } else {
        Err(CliError::Rejected(
            "the demo saw an unexpected rejection or an accepted attack".into(),
        ))
    }
}
