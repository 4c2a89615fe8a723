//! `stateseal status`, `stateseal check` and `stateseal keyset show`: read-only views.

use stateseal::UnixTime;
use std::io::{IsTerminal, Write};

use clap::Args;
use serde_json::Value;
use stateseal::SchedulerConfig;
use stateseal::rotation::{
    Availability, KeysetStatus, Phase, Role, VerifiedKeyset, check_keyset, describe_keyset,
    keyset_status,
};

use super::init::{timing_json, timing_text};
use super::{StoreArg, read_now, registry};
use crate::error::CliError;
use crate::flag_values::{instant, parse_seconds};
use crate::output::{human, kid_json, kid_text, line, object, rfc3339, when};

/// Flags shared by the read-only keyset views.
#[derive(Debug, Args)]
pub(crate) struct ViewArgs {
    #[command(flatten)]
    store: StoreArg,
    /// Unix time in seconds (fraction allowed) to look at; default: now.
    #[arg(long, value_parser = parse_seconds, value_name = "SECS")]
    now: Option<f64>,
    /// One JSON object on stdout.
    #[arg(long)]
    json: bool,
}

/// `stateseal status`.
#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 every live key is available, 1 a live key is unavailable, 2 usage or store error.

Examples:
  stateseal status --store file:///var/lib/stateseal/keyset.json
  STATESEAL_STORE=vault-kv://secret/stateseal stateseal status --json | jq '.keys[] | {kid, role, available}'"
)]
pub(crate) struct StatusArgs {
    #[command(flatten)]
    view: ViewArgs,
}

/// `stateseal check`.
#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 healthy, 1 unhealthy (the reasons are printed), 2 usage error.

Examples:
  stateseal check --store file:///var/lib/stateseal/keyset.json
  */5 * * * * stateseal check --store s3://my-bucket/stateseal/keyset.json --json >> /var/log/stateseal-check.jsonl"
)]
pub(crate) struct CheckArgs {
    #[command(flatten)]
    view: ViewArgs,
}

/// `stateseal keyset show`.
#[derive(Debug, Args)]
pub(crate) struct ShowArgs {
    #[command(flatten)]
    view: ViewArgs,
}

fn phase_text(phase: Option<Phase>) -> &'static str {
    match phase {
        Some(Phase::One) => "phase 1 [old, new]: a new key is propagating; the old key still seals",
        Some(Phase::Two) => "phase 2 [new, old]: the new key seals; older states still open",
        Some(Phase::Three) => "phase 3 [new]: one key, no rotation in flight",
        None => "every key has retired: nothing seals; run `stateseal rotate --force`",
    }
}

fn availability_json(a: &Availability) -> (Value, Value) {
    match a {
        Availability::Available => (true.into(), Value::Null),
        Availability::Unavailable(why) => (false.into(), why.clone().into()),
        _ => (Value::Null, Value::Null),
    }
}

/// The store's document, verified; for an inspection a document that cannot
/// be verified (its MAC key does not unwrap) is an unhealthy answer (exit 1),
/// not a failure to answer, since nothing in it can be shown as true.
async fn verified(
    store: &dyn stateseal::KeysetStore,
    trust: &stateseal::rotation::KeysetTrust,
    now: Option<f64>,
) -> Result<VerifiedKeyset, CliError> {
    let result = super::open_stored(store, &registry(store.uri()), trust, now).await?;
    result.map_err(|e| match e {
        stateseal::Error::Provider(stateseal::ProviderError::Kms { .. }) => CliError::Rejected(format!(
            "the keyset cannot be verified, so nothing in it is shown: its MAC key does not unwrap ({})",
            CliError::from(e)
        )),
        other => CliError::from(other),
    })
}

/// How the document was authenticated, for both outputs: (authenticated, expires_at).
fn integrity(v: Option<&VerifiedKeyset>) -> (Value, Option<f64>) {
    match v {
        Some(v) => (
            v.is_authenticated().into(),
            v.expires_at.map(UnixTime::as_secs_f64),
        ),
        None => (Value::Null, None),
    }
}

fn status_json(st: &KeysetStatus, uri: &str, v: Option<&VerifiedKeyset>) -> Value {
    let (authenticated, expires_at) = integrity(v);
    let ring: Vec<Value> = st
        .ring
        .iter()
        .filter_map(|id| st.entries.iter().find(|e| &e.entry == id))
        .map(|e| kid_json(e.kid))
        .collect();
    let keys: Vec<Value> = st
        .entries
        .iter()
        .map(|e| {
            let (available, error) = availability_json(&e.availability);
            object(
                vec![
                    ("kid", kid_json(e.kid)),
                    ("entry", e.entry.clone().into()),
                    ("role", e.role.label().into()),
                    ("available", available),
                    ("error", error),
                    ("kek", e.kek.clone().into()),
                ],
                &[
                    ("activate_at", Some(e.activate_at.as_secs_f64())),
                    ("retire_at", e.retire_at.map(UnixTime::as_secs_f64)),
                ],
            )
        })
        .collect();
    let next = st.next_change.map_or(Value::Null, |(at, phase)| {
        object(
            vec![("phase", (phase as u8).into())],
            &[("at", Some(at.as_secs_f64()))],
        )
    });
    object(
        vec![
            ("keyset", st.keyset.id.clone().into()),
            ("generation", st.keyset.generation.into()),
            ("store", uri.into()),
            ("phase", st.phase.map_or(Value::Null, |p| (p as u8).into())),
            ("timing", timing_json(st.keyset.timing)),
            ("primary", kid_json(st.primary().and_then(|p| p.kid))),
            ("ring", ring.into()),
            ("keys", keys.into()),
            ("next_change", next),
            ("healthy", st.healthy().into()),
            ("authenticated", authenticated),
            (
                "revocations",
                super::revoke::live_json(&st.keyset, st.now.as_secs_f64()),
            ),
        ],
        &[
            ("now", Some(st.now.as_secs_f64())),
            ("expires_at", expires_at),
        ],
    )
}

fn status_text(
    st: &KeysetStatus,
    uri: &str,
    v: &VerifiedKeyset,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let colour = std::io::stdout().is_terminal();
    let paint = |code: &str, s: &str| {
        if colour {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_owned()
        }
    };
    let now = st.now.as_secs_f64();
    let integrity = match v.expires_at {
        Some(at) if v.is_authenticated() => format!(
            "authenticated (MAC key under {}); fresh until {}",
            v.mac_kek().unwrap_or("?"),
            when(at.as_secs_f64(), now)
        ),
        _ => paint(
            "31",
            "UNAUTHENTICATED (stateseal.keyset/v1): anyone who can write the store can change its keys; run `stateseal keyset upgrade`",
        ),
    };
    line(
        out,
        format!(
            "keyset {} (generation {}) in {uri}\n{integrity}\ntiming: {}\n{}",
            st.keyset.id,
            st.keyset.generation,
            timing_text(st.keyset.timing),
            paint("1", phase_text(st.phase))
        ),
    )?;
    line(
        out,
        format!(
            "{:<9} {:<26} {:<12} {:<38} {:<38} KEK",
            "KEY", "ENTRY", "ROLE", "ACTIVATES", "RETIRES"
        ),
    )?;
    for e in &st.entries {
        let code = match e.role {
            Role::Primary => "32",
            Role::Pending => "36",
            Role::UnsealOnly => "33",
            _ => "90",
        };
        // Pad before painting: escape codes would break the columns.
        let role = format!("{:<12}", e.role.label());
        line(
            out,
            format!(
                "{:<9} {:<26} {} {:<38} {:<38} {}",
                kid_text(e.kid),
                e.entry,
                paint(code, &role),
                when(e.activate_at.as_secs_f64(), now),
                e.retire_at
                    .map_or_else(|| "-".into(), |t| when(t.as_secs_f64(), now)),
                e.kek
            ),
        )?;
        if let Availability::Unavailable(why) = &e.availability {
            line(out, paint("31", &format!("          unavailable: {why}")))?;
        }
    }
    super::revoke::live_text(&st.keyset, now, out)?;
    match st.next_change {
        Some((at, phase)) => line(
            out,
            format!(
                "next: phase {} {} ({})",
                phase as u8,
                human(at.as_secs_f64() - now),
                rfc3339(at.as_secs_f64())
            ),
        ),
        None => line(
            out,
            format!("next: nothing scheduled; rotate with `stateseal rotate --store {uri}`"),
        ),
    }
}

/// `stateseal status`: the timeline, each live key unwrapped; exit 1 while one is unavailable.
pub(crate) async fn status(a: StatusArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let now = read_now(a.view.now)?;
    let (store, trust) = a.view.store.open_trusted()?;
    let registry = registry(store.uri());
    let v = verified(store.as_ref(), &trust, Some(now)).await?;
    let st = keyset_status(&v.doc, &registry, instant(now)?).await;
    if a.view.json {
        line(out, status_json(&st, store.uri(), Some(&v)))?;
    } else {
        status_text(&st, store.uri(), &v, out)?;
    }
    if !st.healthy() {
        return Err(CliError::Reported(1));
    }
    Ok(())
}

/// `stateseal keyset show`: the document and its timeline, verified (one KMS
/// call, the MAC key's; a stale document is shown, with when it went stale),
/// no data key unwrapped.
pub(crate) async fn show(a: ShowArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let now = read_now(a.view.now)?;
    let (store, trust) = a.view.store.open_trusted()?;
    let v = verified(store.as_ref(), &trust, None).await?;
    let st = describe_keyset(&v.doc, instant(now)?);
    if a.view.json {
        return line(out, status_json(&st, store.uri(), Some(&v)));
    }
    status_text(&st, store.uri(), &v, out)
}

/// `stateseal check`: healthy (0) or not (1), with the reasons.
pub(crate) async fn check(a: CheckArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let now = read_now(a.view.now)?;
    let (store, trust) = a.view.store.open_trusted()?;
    let report = check_keyset(
        store.as_ref(),
        &registry(store.uri()),
        &trust,
        instant(now)?,
        SchedulerConfig::default().max_seals_per_key,
    )
    .await;
    if a.view.json {
        let mut v = object(
            vec![
                ("healthy", report.healthy().into()),
                ("store", store.uri().into()),
                ("problems", report.problems.clone().into()),
                ("notes", report.notes.clone().into()),
            ],
            &[("now", Some(now))],
        );
        if let Some(st) = &report.status {
            v["keyset"] = status_json(st, store.uri(), None);
        }
        line(out, v)?;
    } else {
        let verdict = if report.healthy() {
            "healthy"
        } else {
            "UNHEALTHY"
        };
        line(out, format!("{verdict}: {}", store.uri()))?;
        if let Some(st) = &report.status {
            line(
                out,
                format!(
                    "keyset {} (generation {}), {}; timing: {}",
                    st.keyset.id,
                    st.keyset.generation,
                    phase_text(st.phase),
                    timing_text(st.keyset.timing)
                ),
            )?;
            for e in st.entries.iter().filter(|e| e.role != Role::Retired) {
                let state = match &e.availability {
                    Availability::Available => "unwraps, seals and unseals".to_owned(),
                    Availability::Unavailable(why) => format!("unavailable: {why}"),
                    _ => "not checked".to_owned(),
                };
                line(
                    out,
                    format!(
                        "  key {} ({}, entry {}): {state}",
                        kid_text(e.kid),
                        e.role.label(),
                        e.entry
                    ),
                )?;
            }
        }
        for p in &report.problems {
            line(out, format!("problem: {p}"))?;
        }
        for n in &report.notes {
            line(out, format!("note: {n}"))?;
        }
    }
    if report.healthy() {
        Ok(())
    } else {
        Err(CliError::Reported(1))
    }
}
