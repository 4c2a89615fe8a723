//! `stateseal init`: create a keyset with one active key and the fleet's timing profile.

use std::io::Write;

use clap::Args;
use serde_json::{Value, json};
use stateseal::LocalProvider;
use stateseal::rotation::{Timing, init_keyset};

use super::{
    ALLOW_LOCAL_KEK_VAR, StoreArg, TimingArgs, WriteClockArgs, local_kek_allowed, registry,
};
use crate::error::CliError;
use crate::flag_values::instant;
use crate::output::{kid_json, kid_text, line, object};

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stateseal init --kek local:///etc/stateseal/kek.bin --store file:///var/lib/stateseal/keyset.json
  stateseal init --kek aws-kms://arn:aws:kms:eu-west-1:111122223333:key/KEY-ID \\
      --store s3://my-bucket/stateseal/keyset.json --state-ttl 900 --refresh-interval 30
  stateseal init --kek gcp-kms://projects/P/locations/L/keyRings/R/cryptoKeys/K \\
      --store gs://my-bucket/stateseal/keyset.json
  STATESEAL_KEK=hcvault://transit/keys/stateseal STATESEAL_STORE=vault-kv://secret/stateseal stateseal init")]
pub(crate) struct InitArgs {
    /// KEK URI: local://PATH (created with mode 0600 if absent; development only),
    /// aws-kms://ARN, gcp-kms://projects/…/cryptoKeys/…, azure-kv://HSM/keys/NAME, hcvault://transit/KEY.
    #[arg(
        long,
        env = "STATESEAL_KEK",
        hide_env_values = true,
        value_name = "URI"
    )]
    kek: String,
    #[command(flatten)]
    store: StoreArg,
    #[command(flatten)]
    timing: TimingArgs,
    #[command(flatten)]
    clock: WriteClockArgs,
    /// One JSON object on stdout.
    #[arg(long)]
    json: bool,
}

/// The timing profile as JSON.
pub(crate) fn timing_json(t: Option<Timing>) -> Value {
    t.map_or(Value::Null, |t| {
        json!({"refresh_interval": t.refresh_interval.as_secs_f64(),
            "max_skew": t.max_skew.as_secs_f64(),
            "state_ttl": t.ttl.as_secs_f64(),
            "propagation": t.propagation.as_secs_f64()})
    })
}

/// The timing profile as text.
pub(crate) fn timing_text(t: Option<Timing>) -> String {
    match t {
        Some(t) => format!(
            "R {}s, S {}s, T {}s, P {}s",
            t.refresh_interval.as_secs_f64(),
            t.max_skew.as_secs_f64(),
            t.ttl.as_secs_f64(),
            t.propagation.as_secs_f64()
        ),
        None => "none recorded (rotations use the flags given, or R 30s, S 60s, T 600s)".into(),
    }
}

/// `s` as a TOML basic string (JSON's escapes are TOML's).
fn toml_string(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

pub(crate) async fn init(a: InitArgs, out: &mut dyn Write) -> Result<(), CliError> {
    // Everything is checked before anything, KEK file included, is created.
    let timing = a.timing.over(Timing::default())?;
    let now = a.clock.now(timing.max_skew.as_secs_f64())?;
    let store = a.store.open()?;
    let registry = registry(store.uri());
    if a.kek.starts_with("local://") && !local_kek_allowed(store.uri()) {
        return Err(CliError::Usage(format!(
            "--kek: local:// KEKs are for development keysets in a file:// store; for another store set {ALLOW_LOCAL_KEK_VAR}=1 (servers must then allow local KEKs too)"
        )));
    }
    registry
        .provider_for(&a.kek)
        .and_then(|p| p.check_kek(&a.kek))
        .map_err(|e| CliError::Usage(format!("--kek: {e}")))?;
    if store.load().await.map_err(CliError::from)?.is_some() {
        return Err(CliError::Rejected(format!(
            "{} already holds a keyset; nothing was changed (rotate it with `stateseal rotate`)",
            store.uri()
        )));
    }
    let mut created_kek = None;
    if a.kek.starts_with("local://") {
        let path =
            LocalProvider::kek_path(&a.kek).map_err(|e| CliError::Usage(format!("--kek: {e}")))?;
        if !path.exists() {
            LocalProvider::create_kek(path).map_err(|e| CliError::Usage(format!("--kek: {e}")))?;
            created_kek = Some(path.to_owned());
        }
    }
    let doc = match init_keyset(store.as_ref(), &registry, &a.kek, timing, instant(now)?).await {
        Ok(doc) => doc,
        Err(e) => {
            // A refused init leaves nothing behind.
            if let Some(path) = &created_kek {
                let _ = std::fs::remove_file(path);
            }
            return Err(match e {
                stateseal::Error::Keyset(stateseal::KeysetError::Conflict { .. }) => {
                    CliError::Rejected(format!(
                        "{} already holds a keyset; nothing was changed",
                        store.uri()
                    ))
                }
                other => CliError::from(other),
            });
        }
    };
    if let Some(path) = &created_kek {
        eprintln!(
            "created KEK file {} (mode 0600; the local provider is for development only)",
            path.display()
        );
    }
    let key = &doc.keys[0];
    if a.json {
        return line(
            out,
            object(
                vec![
                    ("keyset", doc.id.clone().into()),
                    ("keyset_keks", vec![a.kek.clone()].into()),
                    ("generation", doc.generation.into()),
                    ("store", store.uri().into()),
                    ("kid", kid_json(key.kid)),
                    ("entry", key.entry.clone().into()),
                    ("timing", timing_json(doc.timing)),
                ],
                &[("created_at", Some(now))],
            ),
        );
    }
    line(
        out,
        format!(
            "created keyset {} (generation 1) in {}: key {} (entry {}) seals from now\ntiming: {}\n\
             pin it in every server's configuration (and pass the same to this CLI as --keyset-id / --kek-pin):\n\
             keyset_id = {}\nkeyset_keks = [{}]",
            doc.id,
            store.uri(),
            kid_text(key.kid),
            key.entry,
            timing_text(doc.timing),
            toml_string(&doc.id),
            toml_string(&a.kek),
        ),
    )
}
