//! `stateseal token seal|open|mint|verify`: operators' tools for "why was this state rejected?".

use std::io::{Read, Write};
use std::sync::Arc;

use clap::{Args, Subcommand};
use stateseal::{
    AesGcmCodec, Clock, Envelope, Principal, RequestIdentity, RingHandle, StateCodec, SystemClock,
};

use crate::error::CliError;
use crate::key_spec::ring_from_specs;
use crate::keyset_cmd::ring_handle_from_store;

/// Token tools.
#[derive(Debug, Subcommand)]
pub(crate) enum TokenCmd {
    /// Seal the payload read from stdin; print the token.
    Seal(KeyArgs),
    /// Open a token; print the payload bytes.
    Open {
        #[command(flatten)]
        keys: KeyArgs,
        /// The token (`v1.…`).
        token: String,
    },
    /// Mint a sealed requestState the way a server would.
    Mint(MintArgs),
    /// Verify an echoed requestState the way a server would; print the state.
    Verify(VerifyArgs),
}

#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub(crate) struct KeyArgs {
    /// Ring key: `hex:<hex>`, `b64:<base64>`, `text:<text>`, `file:<path>` or `env:<VAR>`. The first seals, all unseal.
    #[arg(long = "key", value_name = "SPEC")]
    keys: Vec<String>,
    /// Take the ring from a keyset store instead (what a server holds at --now).
    #[arg(long, value_name = "STORE_URI")]
    keyset: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct RoundArgs {
    #[command(flatten)]
    keys: KeyArgs,
    /// tools/call, prompts/get or resources/read.
    #[arg(long)]
    method: String,
    /// The request params object, e.g. '{"name":"deploy","arguments":{"env":"prod"}}'.
    #[arg(long)]
    params: String,
    /// The service audience (usually the server's name).
    #[arg(long)]
    audience: Option<String>,
    /// The principal string the state is bound to.
    #[arg(long)]
    principal: Option<String>,
    /// Unix time in seconds (fraction allowed); default: now.
    #[arg(long, value_parser = parse_seconds)]
    now: Option<f64>,
}

#[derive(Debug, Args)]
pub(crate) struct MintArgs {
    #[command(flatten)]
    round: RoundArgs,
    /// The plaintext state the handler returned.
    #[arg(long)]
    state: String,
    /// Lifetime in seconds (fraction allowed).
    #[arg(long, value_parser = parse_seconds, default_value = "600")]
    ttl: f64,
}

#[derive(Debug, Args)]
pub(crate) struct VerifyArgs {
    #[command(flatten)]
    round: RoundArgs,
    /// The echoed token.
    token: String,
}

/// `--now`/`--ttl`: seconds with an optional fraction.
pub(crate) fn parse_seconds(s: &str) -> Result<f64, String> {
    let ok = !s.is_empty()
        && s.chars().all(|c| c.is_ascii_digit() || c == '.')
        && s.matches('.').count() <= 1;
    match s.parse::<f64>() {
        Ok(v) if ok && v.is_finite() => Ok(v),
        _ => Err(format!(
            "expected seconds like 1782345600 or 1782345600.25, got {s:?}"
        )),
    }
}

async fn codec(keys: &KeyArgs, now: f64) -> Result<Arc<AesGcmCodec>, CliError> {
    let handle = match &keys.keyset {
        Some(uri) => ring_handle_from_store(uri, now).await?,
        None => Arc::new(RingHandle::new(ring_from_specs(&keys.keys)?)),
    };
    Ok(Arc::new(AesGcmCodec::new(handle)))
}

impl RoundArgs {
    async fn envelope(&self, ttl: f64) -> Result<(Envelope, RequestIdentity, f64), CliError> {
        let now = self.now.unwrap_or_else(|| SystemClock.now());
        let envelope = Envelope::builder(codec(&self.keys, now).await?, self.audience.as_deref())
            .ttl(ttl)
            .build()
            .map_err(|e| CliError::Usage(format!("--ttl: {e}")))?;
        let id = RequestIdentity::from_json(&self.method, self.params.as_bytes())
            .map_err(|e| CliError::Usage(format!("--params: {e}")))?;
        Ok((envelope, id, now))
    }

    fn principal(&self) -> Option<Principal> {
        self.principal.as_deref().map(Principal::new)
    }
}

pub(crate) async fn run(cmd: TokenCmd, out: &mut dyn Write) -> Result<(), CliError> {
    let io = |e: std::io::Error| CliError::Failed(format!("writing output: {e}"));
    match cmd {
        TokenCmd::Seal(keys) => {
            let mut payload = Vec::new();
            std::io::stdin()
                .read_to_end(&mut payload)
                .map_err(|e| CliError::Failed(format!("reading stdin: {e}")))?;
            let token = codec(&keys, SystemClock.now()).await?.seal(&payload)?;
            writeln!(out, "{token}").map_err(io)
        }
        TokenCmd::Open { keys, token } => {
            let payload = codec(&keys, SystemClock.now()).await?.unseal(&token)?;
            out.write_all(&payload).map_err(io)
        }
        TokenCmd::Mint(m) => {
            let (envelope, id, now) = m.round.envelope(m.ttl).await?;
            let token =
                envelope.mint_at(&id, m.state.as_bytes(), m.round.principal().as_ref(), now)?;
            writeln!(out, "{token}").map_err(io)
        }
        TokenCmd::Verify(v) => {
            let (envelope, id, now) = v.round.envelope(stateseal::DEFAULT_TTL_SECS).await?;
            // The token exactly as given: a server rejects `TOKEN\n`, so the CLI does too.
            let state = envelope.verify_at(&id, &v.token, v.round.principal().as_ref(), now)?;
            // Exactly the bytes the handler would see (WTF-8 if the state holds a lone surrogate).
            out.write_all(state.as_bytes()).map_err(io)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_seconds;

    #[test]
    fn seconds() {
        assert_eq!(parse_seconds("1782345600.25"), Ok(1782345600.25));
        assert_eq!(parse_seconds("600"), Ok(600.0));
        for bad in ["", "-1", "1e3", "1.2.3", "inf", "NaN", "10s"] {
            assert!(parse_seconds(bad).is_err(), "{bad}");
        }
    }
}
