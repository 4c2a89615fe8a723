//! `stateseal rotate`: start a three-phase rotation (or an emergency one), or
//! with `--dry-run` show what it would write.

use std::io::Write;
use std::time::Duration;

use clap::Args;
use serde_json::Value;
use stateseal::rotation::{
    DEFAULT_MAX_LIVE_KEYS, RotateMode, RotationPlan, operator_generation, plan_rotation,
    rotate_keyset,
};
use stateseal::{Error, KeysetError, SchedulerConfig};

use super::init::{timing_json, timing_text};
use super::{StoreArg, TimingArgs, WriteClockArgs, load_verified, registry};
use crate::error::CliError;
use crate::flag_values::instant;
use crate::output::{kid_json, kid_text, line, object, when};

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stateseal rotate --store file:///var/lib/stateseal/keyset.json --dry-run
  stateseal rotate --store file:///var/lib/stateseal/keyset.json
  stateseal rotate --store s3://my-bucket/stateseal/keyset.json --if-due   # from a CronJob
  stateseal rotate --store s3://my-bucket/stateseal/keyset.json --now-compromise --json")]
pub(crate) struct RotateArgs {
    #[command(flatten)]
    store: StoreArg,
    /// Rotate even while a rotation is in flight (the timeline is extended safely).
    #[arg(long, conflicts_with = "now_compromise")]
    force: bool,
    /// Key compromise: the new key seals at once and every other key retires now.
    #[arg(long = "now-compromise")]
    now_compromise: bool,
    /// Work out and prove the rotation (KMS calls included), print it, write nothing.
    #[arg(long = "dry-run")]
    dry_run: bool,
    /// For a scheduled job: rotate only when the primary is due (by age or
    /// seal reservations), else renew the document when less than half its
    /// validity is left, else do nothing (exit 0 in each case).
    #[arg(long = "if-due", conflicts_with_all = ["force", "now_compromise", "dry_run"])]
    if_due: bool,
    /// With --if-due: the primary key's age that makes a rotation due [default: 30 days].
    #[arg(long = "rotation-period", requires = "if_due", value_parser = crate::flag_values::parse_duration, value_name = "SECS")]
    rotation_period: Option<Duration>,
    /// Refuse a forced rotation that would leave more keys than this unsealing at once.
    #[arg(long = "max-live-keys", default_value_t = DEFAULT_MAX_LIVE_KEYS, value_name = "N")]
    max_live_keys: usize,
    /// Override the keyset's timing profile for this rotation.
    #[command(flatten)]
    timing: TimingArgs,
    #[command(flatten)]
    clock: WriteClockArgs,
    /// One JSON object on stdout.
    #[arg(long)]
    json: bool,
}

fn refused(e: Error) -> CliError {
    match e {
        Error::Keyset(KeysetError::RotationInFlight(why)) => CliError::Rejected(format!(
            "rotation refused, nothing was written: {why}; `stateseal status` says when it completes, or pass --force"
        )),
        Error::Keyset(KeysetError::Conflict { found, .. }) => CliError::Rejected(format!(
            "rotation refused, nothing was written: another rotation landed first (generation {}); run `stateseal status`",
            found.map_or_else(|| "?".into(), |g| g.to_string())
        )),
        Error::Keyset(KeysetError::RotationRefused(_)) => CliError::Rejected(e.to_string()),
        Error::Keyset(KeysetError::Refused { .. }) => {
            CliError::Rejected(format!("rotation refused, nothing was written: {e}"))
        }
        Error::Config(m) => CliError::Usage(m),
        other => CliError::from(other),
    }
}

pub(crate) async fn rotate(a: RotateArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let (store, trust) = a.store.open_trusted()?;
    let registry = registry(store.uri());
    // Verified (tag, pins, minimum generation) before anything it says is used;
    // freshness is checked at the write's own instant below.
    let verified = load_verified(store.as_ref(), &registry, &trust, None)
        .await
        .map_err(|e| match e {
            CliError::Rejected(m) => CliError::Rejected(format!(
                "rotation refused, nothing was written: {}",
                m.trim_start_matches("rejected: ")
            )),
            other => other,
        })?;
    let doc = &verified.doc;
    let base = doc.timing.unwrap_or_default();
    let timing = if a.timing.any() {
        a.timing.over(base)?
    } else {
        base
    };
    // An override may only make this rotation slower: a shorter T (or R, S, P)
    // than the fleet's profile would retire keys under states still alive.
    if let Some(profile) = doc.timing {
        for (flag, over, fleet) in [
            (
                "--refresh-interval",
                timing.refresh_interval,
                profile.refresh_interval,
            ),
            ("--max-skew", timing.max_skew, profile.max_skew),
            ("--state-ttl", timing.ttl, profile.ttl),
            ("--propagation", timing.propagation, profile.propagation),
        ] {
            if over < fleet {
                return Err(CliError::Usage(format!(
                    "{flag} {} is shorter than the keyset's profile ({}s): servers rely on it, so a rotation may only be slower",
                    over.as_secs_f64(),
                    fleet.as_secs_f64()
                )));
            }
        }
        // Servers refuse a key that activates later than the profile's P + S.
        let latest = profile.propagation + profile.max_skew;
        if timing.propagation > latest {
            return Err(CliError::Usage(format!(
                "--propagation {} would activate the new key later than the keyset's profile allows (P + S = {}s), and servers would refuse the document; re-create the keyset with the longer profile",
                timing.propagation.as_secs_f64(),
                latest.as_secs_f64()
            )));
        }
    }
    let now = a.clock.now(timing.max_skew.as_secs_f64())?;
    let at = instant(now)?;
    if a.max_live_keys < 2 {
        return Err(CliError::Usage(
            "--max-live-keys must be at least 2: a rotation holds the old and the new key".into(),
        ));
    }
    let mode = if a.now_compromise {
        RotateMode::Compromise
    } else if a.force {
        RotateMode::Forced
    } else {
        RotateMode::Scheduled
    };
    if a.if_due {
        let period = a
            .rotation_period
            .or(SchedulerConfig::default().rotation_period)
            .unwrap_or(Duration::MAX);
        // The same checks as any write, freshness included: a stale document is renewed by hand.
        let fresh = load_verified(store.as_ref(), &registry, &trust, Some(now)).await?;
        match stateseal::rotation::rotation_due(&fresh, at, period) {
            Some(why) => eprintln!("rotation due: {why}"),
            None => {
                let renewed = stateseal::rotation::renew_if_due(
                    store.as_ref(),
                    &registry,
                    &trust,
                    &fresh,
                    at,
                )
                .await
                .map_err(CliError::from)?;
                return super::due::report(out, renewed.as_ref(), &fresh, now, a.json);
            }
        }
    }
    let plan = if a.dry_run {
        // The same checks as the write, freshness included.
        load_verified(store.as_ref(), &registry, &trust, Some(now)).await?;
        plan_rotation(
            &verified,
            &registry,
            Some(timing),
            at,
            mode,
            a.max_live_keys,
        )
        .await
        .map(|mut plan| {
            plan.next.generation = operator_generation(doc.generation, at);
            plan
        })
    } else {
        rotate_keyset(
            store.as_ref(),
            &registry,
            &trust,
            Some(timing),
            at,
            mode,
            a.max_live_keys,
        )
        .await
    }
    .map_err(refused)?;
    if a.json {
        return line(out, plan_json(&plan, mode, a.dry_run));
    }
    line(out, plan_text(&plan, mode, a.dry_run, now))
}

fn mode_label(mode: RotateMode) -> &'static str {
    match mode {
        RotateMode::Scheduled => "scheduled",
        RotateMode::Forced => "forced",
        RotateMode::Compromise => "compromise",
    }
}

fn plan_json(plan: &RotationPlan, mode: RotateMode, dry_run: bool) -> Value {
    let new = plan.new_entry();
    object(
        vec![
            ("action", if dry_run { "planned" } else { "rotated" }.into()),
            ("dry_run", dry_run.into()),
            ("mode", mode_label(mode).into()),
            ("keyset", plan.next.id.clone().into()),
            ("generation", plan.next.generation.into()),
            // A dry run's key is generated for the proof and thrown away.
            (
                "kid",
                if dry_run {
                    Value::Null
                } else {
                    kid_json(Some(plan.kid))
                },
            ),
            (
                "entry",
                if dry_run {
                    Value::Null
                } else {
                    plan.entry.clone().into()
                },
            ),
            ("pruned", plan.pruned.clone().into()),
            ("timing", timing_json(Some(plan.timing))),
        ],
        &[
            ("activate_at", new.map(|e| e.activate_at.as_secs_f64())),
            (
                "retire_previous_at",
                plan.retire_previous_at()
                    .map(stateseal::UnixTime::as_secs_f64),
            ),
        ],
    )
}

fn plan_text(plan: &RotationPlan, mode: RotateMode, dry_run: bool, now: f64) -> String {
    let new = plan.new_entry();
    let activates = new.map_or_else(|| "?".into(), |e| when(e.activate_at.as_secs_f64(), now));
    let retires = plan
        .retire_previous_at()
        .map_or_else(|| "-".into(), |t| when(t.as_secs_f64(), now));
    let key = if dry_run {
        "a new key".to_owned()
    } else {
        format!(
            "new key {} (entry {})",
            kid_text(Some(plan.kid)),
            plan.entry
        )
    };
    let mut text = match (dry_run, mode) {
        (true, _) => format!(
            "dry run, nothing written: a {} rotation now would write generation {}: {key} seals from {activates}; the keys it supersedes unseal until {retires}",
            mode_label(mode),
            plan.next.generation
        ),
        (false, RotateMode::Compromise) => format!(
            "emergency rotation written (generation {}): {key} seals now and every other key is retired.\n\
             This breaks every state sealed before now (clients start those conversations again), and states\n\
             sealed with an old key by servers that have not refreshed yet (up to {}s).\n\
             Raise min_generation to {} in every server's configuration (and --min-generation here), so that\n\
             a restarted instance refuses a restored pre-compromise backup.",
            plan.next.generation,
            plan.timing.refresh_interval.as_secs_f64(),
            plan.next.generation
        ),
        (false, _) => format!(
            "rotation written (generation {}): {key} seals from {activates}; the previous keys unseal until {retires}",
            plan.next.generation
        ),
    };
    text.push_str(&format!("\ntiming: {}", timing_text(Some(plan.timing))));
    if !plan.pruned.is_empty() {
        text.push_str(&format!(
            "\npruned retired entries: {}",
            plan.pruned.join(", ")
        ));
    }
    text
}
