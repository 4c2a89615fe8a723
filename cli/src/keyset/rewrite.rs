//! `stateseal keyset upgrade` and `stateseal keyset renew`: writes that change
//! no key, each verified before and after.

use stateseal::UnixTime;
use std::io::Write;
use std::time::Duration;

use clap::Args;
use stateseal::rotation::{DEFAULT_KEYSET_VALIDITY, KeysetTrust, renew_keyset, upgrade_keyset};
use stateseal::{Error, KeysetError};

use super::{StoreArg, WriteClockArgs, registry};
use crate::error::CliError;
use crate::flag_values::{instant, parse_duration};
use crate::output::{line, object, when};

/// `stateseal keyset upgrade`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stateseal keyset upgrade --store file:///var/lib/stateseal/keyset.json
  stateseal keyset upgrade --store s3://my-bucket/stateseal/keyset.json \\
      --keyset-id ks_… --kek-pin aws-kms://arn:aws:kms:eu-west-1:111122223333:key/")]
pub(crate) struct UpgradeArgs {
    #[command(flatten)]
    store: StoreArg,
    /// KEK for the new MAC key [default: the primary key's KEK].
    #[arg(long = "mac-kek", value_name = "URI")]
    mac_kek: Option<String>,
    #[command(flatten)]
    clock: WriteClockArgs,
    /// One JSON object on stdout.
    #[arg(long)]
    json: bool,
}

/// `stateseal keyset renew`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stateseal keyset renew --store file:///var/lib/stateseal/keyset.json --generation 12
  stateseal keyset renew --store gs://my-bucket/stateseal/keyset.json --generation 12 --validity 1209600")]
pub(crate) struct RenewArgs {
    #[command(flatten)]
    store: StoreArg,
    /// The generation to renew, as `stateseal status` shows it: renewing
    /// makes a document fresh again, so name the one you mean.
    #[arg(long, value_name = "N")]
    generation: u64,
    /// Seconds the renewed document stays fresh [default: 604800, 7 days].
    #[arg(long, value_parser = parse_duration, value_name = "SECS")]
    validity: Option<Duration>,
    #[command(flatten)]
    clock: WriteClockArgs,
    /// One JSON object on stdout.
    #[arg(long)]
    json: bool,
}

fn refused(e: Error) -> CliError {
    match e {
        Error::Config(m) => CliError::Rejected(format!("{m}; nothing was written")),
        Error::Keyset(KeysetError::Conflict { expected, found }) => CliError::Rejected(format!(
            "the store holds generation {}, not {}; nothing was written (run `stateseal status`)",
            found.map_or_else(|| "none".into(), |g| g.to_string()),
            expected.map_or_else(|| "none".into(), |g| g.to_string()),
        )),
        other => CliError::from(other),
    }
}

pub(crate) async fn upgrade(a: UpgradeArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let store = a.store.open()?;
    let policy = a.store.trust.policy(store.uri())?;
    let now = a.clock.now(
        stateseal::rotation::Timing::default()
            .max_skew
            .as_secs_f64(),
    )?;
    let v = upgrade_keyset(
        store.as_ref(),
        &registry(store.uri()),
        &policy,
        a.mac_kek.as_deref(),
        DEFAULT_KEYSET_VALIDITY,
        instant(now)?,
    )
    .await
    .map_err(refused)?;
    written(
        out,
        "upgraded to stateseal.keyset/v2",
        &v,
        store.uri(),
        now,
        a.json,
    )
}

pub(crate) async fn renew(a: RenewArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let (store, trust): (_, KeysetTrust) = a.store.open_trusted()?;
    let validity = a.validity.unwrap_or(DEFAULT_KEYSET_VALIDITY);
    let now = a.clock.now(
        stateseal::rotation::Timing::default()
            .max_skew
            .as_secs_f64(),
    )?;
    let v = renew_keyset(
        store.as_ref(),
        &registry(store.uri()),
        &trust,
        a.generation,
        validity,
        instant(now)?,
    )
    .await
    .map_err(refused)?;
    written(out, "renewed", &v, store.uri(), now, a.json)
}

fn written(
    out: &mut dyn Write,
    what: &str,
    v: &stateseal::rotation::VerifiedKeyset,
    uri: &str,
    now: f64,
    json: bool,
) -> Result<(), CliError> {
    if json {
        return line(
            out,
            object(
                vec![
                    ("keyset", v.doc.id.clone().into()),
                    ("generation", v.doc.generation.into()),
                    ("store", uri.into()),
                    ("mac_kek", v.mac_kek().unwrap_or_default().into()),
                ],
                &[("expires_at", v.expires_at.map(UnixTime::as_secs_f64))],
            ),
        );
    }
    line(
        out,
        format!(
            "{what}: keyset {} generation {} in {uri}, verified; MAC key under {}; fresh until {}",
            v.doc.id,
            v.doc.generation,
            v.mac_kek().unwrap_or("?"),
            v.expires_at
                .map_or_else(|| "?".into(), |t| when(t.as_secs_f64(), now)),
        ),
    )
}
