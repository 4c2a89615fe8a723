//! `stateseal revoke`: refuse states already issued, without a rotation, by
//! writing a revocation entry into the authenticated keyset document; and how
//! `status` and `keyset show` list the live entries.

use std::io::Write;

use clap::{ArgGroup, Args};
use serde_json::Value;
use stateseal::keyset::live_until;
use stateseal::rotation::{Revoked, revoke as write_revocation};
use stateseal::{
    Error, Keyset, KeysetError, Principal, Revocation, RevocationSelector, UnixTime, hex_prefix,
};

use super::{StoreArg, WriteClockArgs, registry};
use crate::error::CliError;
use crate::flag_values::instant;
use crate::output::{line, object, rfc3339, when};

/// `stateseal revoke`.
#[derive(Debug, Args)]
#[command(
    group(ArgGroup::new("selector").required(true).args(["principal", "principal_file", "client_id", "all_before"])),
    after_help = "TIME is Unix seconds (fraction allowed) or RFC 3339 (2026-06-25T00:00:00Z).

Exit status: 0 written (or already there), 1 refused (the document, or another writer), 2 usage or input error (nothing written).

Examples:
  stateseal revoke --store file:///var/lib/stateseal/keyset.json --principal-file principal.json
  stateseal revoke --store s3://my-bucket/stateseal/keyset.json --client-id app-123 --before 2026-06-25T00:00:00Z
  stateseal revoke --store s3://my-bucket/stateseal/keyset.json --all-before 1782345600 --json"
)]
pub(crate) struct RevokeArgs {
    #[command(flatten)]
    store: StoreArg,
    /// Revoke the states bound to this principal, in the form `stateseal token
    /// mint --principal` takes (visible in the process list: prefer --principal-file).
    #[arg(long, value_name = "PRINCIPAL")]
    principal: Option<String>,
    /// Read the principal from this file (`-`: stdin), off the command line.
    #[arg(long = "principal-file", value_name = "PATH")]
    principal_file: Option<String>,
    /// Revoke the states of every principal of this OAuth client id.
    #[arg(long = "client-id", value_name = "ID")]
    client_id: Option<String>,
    /// Revoke every state issued before TIME, for all users.
    #[arg(long = "all-before", value_parser = parse_time, value_name = "TIME")]
    all_before: Option<f64>,
    /// With --principal or --client-id: revoke the states issued before TIME [default: now].
    #[arg(long, value_parser = parse_time, value_name = "TIME", conflicts_with = "all_before")]
    before: Option<f64>,
    #[command(flatten)]
    clock: WriteClockArgs,
    /// One JSON object on stdout.
    #[arg(long)]
    json: bool,
}

/// TIME: Unix seconds (fraction allowed) or RFC 3339.
fn parse_time(s: &str) -> Result<f64, String> {
    if let Ok(secs) = crate::flag_values::parse_seconds(s) {
        return Ok(secs);
    }
    time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
        .map(|t| t.unix_timestamp() as f64 + f64::from(t.nanosecond()) / 1e9)
        .map_err(|_| {
            format!("expected Unix seconds (1782345600.25) or RFC 3339 (2026-06-25T00:00:00Z), got {s:?}")
        })
}

impl RevokeArgs {
    fn entry(&self, now: f64) -> Result<Revocation, CliError> {
        // Flags and clocks give finite times; the writer refuses any other as it would.
        let instant = |t: f64| {
            UnixTime::from_secs_f64(t).ok_or_else(|| {
                CliError::Usage(
                    "times must be Unix seconds between 1970 and 9999 (not milliseconds)".into(),
                )
            })
        };
        let before = self.before.unwrap_or(now);
        if let Some(t) = self.all_before {
            return Ok(Revocation::all_before(instant(t)?));
        }
        if let Some(id) = &self.client_id {
            if id.is_empty() {
                return Err(CliError::Usage("--client-id: must not be empty".into()));
            }
            return Ok(Revocation::client_id(id, instant(before)?));
        }
        let text = match &self.principal_file {
            // An editor's or `echo`'s final newline would make a digest no state carries.
            Some(path) => {
                let mut text = crate::flag_values::file_text("--principal-file", path)?;
                if text.ends_with('\n') {
                    text.pop();
                    if text.ends_with('\r') {
                        text.pop();
                    }
                }
                text
            }
            None => self.principal.clone().unwrap_or_default(),
        };
        if text.is_empty() {
            return Err(CliError::Usage("--principal: must not be empty".into()));
        }
        if !is_components_form(&text) {
            // Allowed (a server may bind its own form), but a typo would revoke nothing, silently.
            eprintln!(
                "note: the principal is not a [client_id, issuer, subject] JSON array, the form servers bind authenticated callers in; it revokes only states bound to exactly this text"
            );
        }
        Ok(Revocation::principal(
            &Principal::new(text),
            instant(before)?,
        ))
    }
}

/// Whether `text` is `[client_id, issuer, subject]` as the servers render it:
/// compact JSON, a string and two strings or nulls.
fn is_components_form(text: &str) -> bool {
    let Ok(Value::Array(parts)) = serde_json::from_str::<Value>(text) else {
        return false;
    };
    let [Value::String(client), issuer, subject] = parts.as_slice() else {
        return false;
    };
    fn part(v: &Value) -> Option<Option<&str>> {
        match v {
            Value::String(s) => Some(Some(s.as_str())),
            Value::Null => Some(None),
            _ => None,
        }
    }
    match (part(issuer), part(subject)) {
        (Some(i), Some(s)) => {
            Principal::from_components(client, i, s).as_bytes() == text.as_bytes()
        }
        _ => false,
    }
}

fn refused(e: Error) -> CliError {
    match e {
        Error::Config(m) => CliError::Usage(m),
        Error::Keyset(KeysetError::Conflict { found, .. }) => CliError::Rejected(format!(
            "revocation not written: other writers kept landing first (generation {}); run it again",
            found.map_or_else(|| "?".into(), |g| g.to_string())
        )),
        other => CliError::from(other),
    }
}

pub(crate) async fn revoke(a: RevokeArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let (store, trust) = a.store.open_trusted()?;
    let now = a.clock.now(
        stateseal::rotation::Timing::default()
            .max_skew
            .as_secs_f64(),
    )?;
    let entry = a.entry(now)?;
    let done = write_revocation(
        store.as_ref(),
        &registry(store.uri()),
        &trust,
        entry,
        instant(now)?,
    )
    .await
    .map_err(refused)?;
    written(out, &done, store.uri(), now, a.json)
}

fn written(
    out: &mut dyn Write,
    r: &Revoked,
    uri: &str,
    now: f64,
    json: bool,
) -> Result<(), CliError> {
    let doc = &r.keyset.doc;
    let refresh = doc
        .timing
        .unwrap_or_default()
        .refresh_interval
        .as_secs_f64();
    if json {
        let mut v = entry_json(&r.entry, r.live_until.as_secs_f64());
        v["written"] = r.written.into();
        v["keyset"] = doc.id.clone().into();
        v["generation"] = doc.generation.into();
        v["store"] = uri.into();
        v["refresh_interval"] = refresh.into();
        v["min_generation"] = doc.generation.into();
        return line(out, v);
    }
    let what = if r.written {
        "revoked"
    } else {
        "already revoked (nothing written)"
    };
    line(
        out,
        format!(
            "{what}: the states of {} issued before {}; keyset {} generation {} in {uri}\nservers refuse them from their next refresh (within R = {refresh}s); the entry stays until {}\n\
             running servers refuse a restored older document; so that a restarted one does too, set min_generation = {} in every server's configuration (STATESEAL_MIN_GENERATION) until the entry expires",
            selector_text(&r.entry),
            rfc3339(r.entry.before.as_secs_f64()),
            doc.id,
            doc.generation,
            when(r.live_until.as_secs_f64(), now),
            doc.generation,
        ),
    )
}

/// `principal 1a2b3c4d…`, `client id "app"`, `every user`.
fn selector_text(r: &Revocation) -> String {
    match &r.selector {
        RevocationSelector::Principal(d) => format!("principal {}…", hex_prefix(d)),
        RevocationSelector::ClientId(id) => format!("client id {id:?}"),
        _ => "every user".into(),
    }
}

fn entry_json(r: &Revocation, until: f64) -> Value {
    let (digest, client) = match &r.selector {
        RevocationSelector::Principal(d) => (Value::from(hex_prefix(d)), Value::Null),
        RevocationSelector::ClientId(id) => (Value::Null, Value::from(id.clone())),
        _ => (Value::Null, Value::Null),
    };
    object(
        vec![
            ("kind", r.kind().into()),
            ("principal_sha256_prefix", digest),
            ("client_id", client),
        ],
        &[
            ("before", Some(r.before.as_secs_f64())),
            ("expires", Some(until)),
        ],
    )
}

/// The entries of `doc` that still cover valid states at `now`, with when each leaves.
fn live(doc: &Keyset, now: f64) -> impl Iterator<Item = (&Revocation, f64)> {
    let timing = doc.timing.unwrap_or_default();
    doc.revocations
        .iter()
        .map(move |r| (r, live_until(r, &timing).as_secs_f64()))
        .filter(move |(_, until)| now < *until)
}

/// The live entries as `status --json` and `keyset show --json` list them.
pub(crate) fn live_json(doc: &Keyset, now: f64) -> Value {
    live(doc, now)
        .map(|(r, until)| entry_json(r, until))
        .collect::<Vec<_>>()
        .into()
}

/// The live entries as a table (nothing when there are none).
pub(crate) fn live_text(doc: &Keyset, now: f64, out: &mut dyn Write) -> Result<(), CliError> {
    let entries: Vec<_> = live(doc, now).collect();
    if entries.is_empty() {
        return Ok(());
    }
    line(
        out,
        format!(
            "revocations ({} live):\n{:<10} {:<26} {:<26} EXPIRES",
            entries.len(),
            "KIND",
            "SELECTS",
            "BEFORE"
        ),
    )?;
    for (r, until) in entries {
        let selects = match &r.selector {
            RevocationSelector::Principal(d) => format!("{}…", hex_prefix(d)),
            RevocationSelector::ClientId(id) => format!("{id:?}"),
            _ => "every state".into(),
        };
        line(
            out,
            format!(
                "{:<10} {:<26} {:<26} {}",
                r.kind(),
                selects,
                rfc3339(r.before.as_secs_f64()),
                when(until, now)
            ),
        )?;
    }
    Ok(())
}
