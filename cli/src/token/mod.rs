//! `stateseal token seal|open|mint|verify`: operators' tools for "why was this state rejected?".

mod input;
mod inspect;

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Subcommand};
use stateseal::rotation::{KeysetTrust, VerifiedKeyset, keyset_ring};
use stateseal::{
    AesGcmCodec, Clock, DataError, Envelope, Error, KeyRing, MintOptions, OpenOptions, Principal,
    RequestIdentity, RingHandle, StateCodec, SystemClock, token_key_id,
};

use crate::error::CliError;
use crate::flag_values::{file_text, instant, parse_seconds};
use crate::key_spec::ring_from_specs;
use crate::keyset::{TrustArgs, load_verified, registry};
use crate::output::line;
use input::{params_arg, token_arg};
use inspect::inspect;

/// Token tools.
#[derive(Debug, Subcommand)]
pub(crate) enum TokenCmd {
    /// Seal the payload read from stdin; print the token.
    #[command(
        after_help = "Example:\n  printf 'payload' | stateseal token seal --key file:/etc/stateseal/state.key"
    )]
    Seal {
        #[command(flatten)]
        keys: KeyArgs,
        /// One JSON object on stdout: {"token": …, "kid": …}.
        #[arg(long)]
        json: bool,
    },
    /// Open a token; print the payload bytes.
    #[command(after_help = "Example:\n  stateseal token open --key env:STATE_KEY - < token.txt")]
    Open {
        #[command(flatten)]
        keys: KeyArgs,
        /// The token (`v1.…` or `v2.…`), or `-` to read it from stdin (one trailing newline is dropped).
        token: String,
        /// One JSON object on stdout: {"payload_base64": …}.
        #[arg(long)]
        json: bool,
    },
    /// Mint a sealed requestState the way a server would.
    #[command(
        after_help = "Example:\n  stateseal token mint --key file:/etc/stateseal/state.key --method tools/call \\\n      --params '{\"name\":\"deploy\",\"arguments\":{\"env\":\"prod\"}}' --audience my-server --state awaiting-confirm"
    )]
    Mint(MintArgs),
    /// Verify an echoed requestState the way a server would; print the state.
    #[command(
        after_help = "Examples:\n  stateseal token verify --keyset file:///var/lib/stateseal/keyset.json --method tools/call \\\n      --params @request-params.json --audience my-server - < token.txt"
    )]
    Verify(VerifyArgs),
    /// Show a token's version and key id, and whether a keyset's ring holds that key (no decryption).
    #[command(
        after_help = "Examples:\n  stateseal token inspect v1.AAAA…\n  stateseal token inspect --keyset file:///var/lib/stateseal/keyset.json --json - < token.txt"
    )]
    Inspect(InspectArgs),
}

#[derive(Debug, Args)]
pub(crate) struct InspectArgs {
    /// The token, or `-` to read it from stdin.
    token: String,
    /// Also say whether the ring a server holds at --now (from this keyset store) has the key.
    #[arg(long, value_name = "STORE_URI")]
    keyset: Option<String>,
    #[command(flatten)]
    trust: TrustArgs,
    /// Unix time in seconds (fraction allowed); default: now.
    #[arg(long, value_parser = parse_seconds, value_name = "SECS")]
    now: Option<f64>,
    /// One JSON object on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
#[group(skip)]
pub(crate) struct KeyArgs {
    /// Ring key: `hex:<hex>`, `b64:<base64>`, `text:<text>`, `file:<path>` or `env:<VAR>`. The first seals, all unseal.
    #[arg(
        long = "key",
        value_name = "SPEC",
        conflicts_with = "keyset",
        required_unless_present = "keyset"
    )]
    keys: Vec<String>,
    /// Take the ring from a keyset store instead (what a server holds at --now).
    #[arg(long, value_name = "STORE_URI")]
    keyset: Option<String>,
    #[command(flatten)]
    trust: TrustArgs,
}

#[derive(Debug, Args)]
pub(crate) struct RoundArgs {
    #[command(flatten)]
    keys: KeyArgs,
    /// tools/call, prompts/get or resources/read.
    #[arg(long)]
    method: String,
    /// The request params object ('{"name":"deploy","arguments":{"env":"prod"}}'),
    /// `@FILE` to read it from a file, or `-` from stdin.
    #[arg(long)]
    params: String,
    /// The service audience (usually the server's name).
    #[arg(long)]
    audience: Option<String>,
    /// The principal string the state is bound to (visible in the process
    /// list: prefer --principal-file).
    #[arg(long, conflicts_with = "principal_file")]
    principal: Option<String>,
    /// Read the principal from this file (`-`: stdin), off the command line.
    #[arg(long = "principal-file", value_name = "PATH")]
    principal_file: Option<String>,
    /// Unix time in seconds (fraction allowed); default: now.
    #[arg(long, value_parser = parse_seconds)]
    now: Option<f64>,
    /// One JSON object on stdout (mint: the token, its key id and expiry; verify: the state).
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct MintArgs {
    #[command(flatten)]
    round: RoundArgs,
    /// The plaintext state the handler returned (visible in the process list:
    /// prefer --state-file).
    #[arg(
        long,
        required_unless_present = "state_file",
        conflicts_with = "state_file"
    )]
    state: Option<String>,
    /// Read the state from this file (`-`: stdin), exact bytes, off the command line.
    #[arg(long = "state-file", value_name = "PATH")]
    state_file: Option<String>,
    /// Lifetime in seconds (fraction allowed).
    #[arg(long, value_parser = parse_seconds, default_value = "600")]
    ttl: f64,
}

#[derive(Debug, Args)]
pub(crate) struct VerifyArgs {
    #[command(flatten)]
    round: RoundArgs,
    /// The echoed token, or `-` to read it from stdin (one trailing newline is dropped).
    token: String,
}

/// The verified document in the keyset store `uri` at `now`.
async fn verified_from_store(
    uri: &str,
    trust: &TrustArgs,
    now: f64,
) -> Result<VerifiedKeyset, CliError> {
    let registry = registry(uri);
    let store = registry
        .open_store(uri)
        .map_err(|e| CliError::Usage(format!("--keyset: {e}")))?;
    let trust = KeysetTrust::new(trust.policy(store.uri())?);
    load_verified(store.as_ref(), &registry, &trust, Some(now)).await
}

/// The ring a server holds at `now` for the keyset in `uri`.
async fn ring_from_store(uri: &str, trust: &TrustArgs, now: f64) -> Result<KeyRing, CliError> {
    let v = verified_from_store(uri, trust, now).await?;
    keyset_ring(&v.doc, &registry(uri), instant(now)?)
        .await
        .map_err(|e| CliError::Failed(format!("--keyset: {e}")))
}

async fn ring(keys: &KeyArgs, now: f64) -> Result<Arc<RingHandle>, CliError> {
    let ring = match &keys.keyset {
        Some(uri) => ring_from_store(uri, &keys.trust, now).await?,
        None => ring_from_specs(&keys.keys)?,
    };
    Ok(Arc::new(RingHandle::new(ring)))
}

async fn codec(keys: &KeyArgs, now: f64) -> Result<AesGcmCodec, CliError> {
    Ok(AesGcmCodec::new(ring(keys, now).await?))
}

impl RoundArgs {
    /// The envelope of the round (`ttl` in seconds), its identity, and the
    /// time it is minted or verified at.
    async fn envelope(&self, ttl: f64) -> Result<(Envelope, RequestIdentity, f64), CliError> {
        let now = self.now.unwrap_or_else(|| SystemClock.now().as_secs_f64());
        let ring = ring(&self.keys, now).await?;
        // The builder's own refusal for a TTL no `Duration` holds (negative ones never parse).
        let bad_ttl = || CliError::Usage(format!("--ttl: {}", Error::Data(DataError::InvalidTtl)));
        let ttl = Duration::try_from_secs_f64(ttl).map_err(|_| bad_ttl())?;
        let envelope = Envelope::builder(ring, self.audience.as_deref())
            .ttl(ttl)
            .build()
            .map_err(|e| CliError::Usage(format!("--ttl: {e}")))?;
        let params = params_arg(&self.params)?;
        let id = RequestIdentity::from_json(&self.method, params.as_bytes())
            .map_err(|e| CliError::Usage(format!("--params: {e}")))?;
        Ok((envelope, id, now))
    }

    fn principal(&self) -> Result<Option<Principal>, CliError> {
        let text = match &self.principal_file {
            Some(path) => Some(file_text("--principal-file", path)?),
            None => self.principal.clone(),
        };
        Ok(text.as_deref().map(Principal::new))
    }
}

pub(crate) async fn run(cmd: TokenCmd, out: &mut dyn Write) -> Result<(), CliError> {
    let io = |e: std::io::Error| CliError::Failed(format!("writing output: {e}"));
    match cmd {
        TokenCmd::Seal { keys, json } => {
            let mut payload = Vec::new();
            std::io::stdin()
                .read_to_end(&mut payload)
                .map_err(|e| CliError::Failed(format!("reading stdin: {e}")))?;
            let token = codec(&keys, SystemClock.now().as_secs_f64())
                .await?
                .seal(&payload)?;
            if json {
                return line(out, token_json(&token, &[]));
            }
            writeln!(out, "{token}").map_err(io)
        }
        TokenCmd::Open { keys, token, json } => {
            let token = token_arg(&token)?;
            let payload = codec(&keys, SystemClock.now().as_secs_f64())
                .await?
                .unseal(&token)?;
            if json {
                let b64 =
                    base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &payload);
                return line(out, serde_json::json!({"payload_base64": b64}));
            }
            out.write_all(&payload).map_err(io)
        }
        TokenCmd::Mint(m) => {
            let (envelope, id, now) = m.round.envelope(m.ttl).await?;
            let state = match &m.state_file {
                Some(path) => file_text("--state-file", path)?,
                None => m.state.clone().unwrap_or_default(),
            };
            let principal = m.round.principal()?;
            let options = MintOptions::new()
                .principal(principal.as_ref())
                .at(instant(now)?);
            let token = envelope.mint(&id, state.as_bytes(), options)?;
            if m.round.json {
                let expires = crate::output::object(vec![], &[("expires_at", Some(now + m.ttl))]);
                return line(
                    out,
                    token_json(
                        &token,
                        &[
                            ("expires_at", expires["expires_at"].clone()),
                            ("expires_at_rfc3339", expires["expires_at_rfc3339"].clone()),
                        ],
                    ),
                );
            }
            writeln!(out, "{token}").map_err(io)
        }
        TokenCmd::Verify(v) => {
            let (envelope, id, now) = v
                .round
                .envelope(stateseal::DEFAULT_TTL.as_secs_f64())
                .await?;
            // The token exactly as given: a server rejects `TOKEN\n`, so the CLI does too.
            let token = token_arg(&v.token)?;
            let principal = v.round.principal()?;
            let options = OpenOptions::new()
                .principal(principal.as_ref())
                .at(instant(now)?);
            let state = envelope.open(&id, &token, options)?.state;
            if v.round.json {
                // JSON strings are Unicode: a state holding a lone surrogate (WTF-8) is shown lossily.
                return line(
                    out,
                    serde_json::json!({"valid": true, "state": String::from_utf8_lossy(state.as_bytes())}),
                );
            }
            // Exactly the bytes the handler would see (WTF-8 if the state holds a lone surrogate).
            out.write_all(state.as_bytes()).map_err(io)
        }
        TokenCmd::Inspect(i) => inspect(i, out).await,
    }
}

/// A token as JSON: itself, its key id, and `extra` fields.
fn token_json(token: &str, extra: &[(&str, serde_json::Value)]) -> serde_json::Value {
    let mut v = serde_json::json!({"token": token, "kid": token_key_id(token).map(|k| k.to_hex())});
    for (k, x) in extra {
        v[*k] = x.clone();
    }
    v
}
