//! The Rust envelope's claims from JavaScript: each round's identity from the
//! request as it arrived (the HTTP body parsed here, so arguments are bound
//! exactly as the Rust and Python servers bind them; once per round, see
//! `request.rs`), the principal from its parts. The per-call functions take
//! the envelope as an `External` and everything else as positional
//! arguments: napi-rs checks every borrow of a class instance against a
//! process-wide table, and converting an object reads its properties one by
//! one, each of which cost more than the work here.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use stateseal::{Clock, Envelope, StateCodec, SystemClock};

use crate::request::{PrincipalKey, Requests, Round, RoundId, RoundKey};
use crate::single_use::NativeSingleUse;
use crate::text::{encoded, js_text, token_of};
use crate::{Code, Engine, Shared, fail, open, thrown};

/// Seals and verifies states for one audience and lifetime.
pub struct EnvelopeCore {
    shared: Shared,
    envelope: Envelope,
    requests: Requests,
}

/// Seals through whatever engine the codec has open, refusing once it is closed.
struct Through(Shared);

impl std::fmt::Debug for Through {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Through { .. }")
    }
}

impl StateCodec for Through {
    fn seal(&self, payload: &[u8]) -> std::result::Result<String, stateseal::Error> {
        self.engine()?.codec.seal(payload)
    }

    fn seal_with_headroom(&self, buffer: Vec<u8>) -> std::result::Result<String, stateseal::Error> {
        self.engine()?.codec.seal_with_headroom(buffer)
    }

    fn unseal(&self, token: &str) -> std::result::Result<Vec<u8>, stateseal::Error> {
        self.engine()?.codec.unseal(token)
    }

    fn unseal_in_place(
        &self,
        token: &str,
    ) -> std::result::Result<(Vec<u8>, std::ops::Range<usize>), stateseal::Error> {
        self.engine()?.codec.unseal_in_place(token)
    }

    /// The engine's ring's revocations (a closed codec revokes everything).
    fn revoked(&self, iat: f64, principal: Option<&[u8]>) -> bool {
        self.engine()
            .map_or(true, |e| e.codec.revoked(iat, principal))
    }
}

impl Through {
    fn engine(&self) -> std::result::Result<Arc<crate::Engine>, stateseal::Error> {
        self.0
            .load_full()
            .ok_or(stateseal::Error::Config(crate::CLOSED.into()))
    }
}

impl EnvelopeCore {
    pub(crate) fn new(
        shared: Shared,
        audience: Option<String>,
        ttl: f64,
    ) -> std::result::Result<Self, Error<Code>> {
        let engine = open(&shared)?;
        if let Some(limit) = engine.ttl
            && ttl > limit
        {
            return Err(fail(
                Code::Config,
                format!(
                    "ttlSeconds {ttl} exceeds the keyset's state lifetime T = {limit}: rotation keeps keys for T only"
                ),
            ));
        }
        let envelope =
            Envelope::builder(Arc::new(Through(Arc::clone(&shared))), audience.as_deref())
                .ttl(ttl)
                .build()
                .map_err(|e| fail(Code::Config, e.to_string()))?;
        Ok(Self {
            shared,
            envelope,
            requests: Requests::default(),
        })
    }
}

fn identity(round: &Round) -> std::result::Result<&stateseal::RequestIdentity, Error<Code>> {
    round.identity.as_ref().map_err(thrown)
}

/// The round of `handle`, or `ERR_STATESEAL_ROUND` when a later round took
/// its slot (JavaScript then names the round again).
fn round_of(envelope: &EnvelopeCore, handle: i64) -> std::result::Result<Arc<Round>, Error<Code>> {
    u64::try_from(handle)
        .ok()
        .and_then(|h| envelope.requests.round(h))
        .ok_or_else(|| fail(Code::Round, "the round is gone"))
}

/// Parses an HTTP `body` (one JSON-RPC message or a batch) once for all its
/// rounds; the handle names it to `envelopeRound`. Never throws: a body that
/// is not JSON-RPC makes every round of it malformed.
#[napi]
pub fn envelope_parse(
    #[napi(ts_arg_type = "ExternalObject<'Envelope'>")] envelope: &External<EnvelopeCore>,
    body: String,
) -> i64 {
    handle_number(envelope.requests.parse(&body))
}

/// Names the round `round` (a number JavaScript chose, unique among this
/// envelope's rounds) of the parsed body `body` (a handle from
/// `envelopeParse`): the round's `method` and JSON-RPC id (a number, or any other id as JSON), the
/// principal (a text of its own, or client id, issuer and subject, or none).
/// Its identity is worked out now, once for the round's verify and mint.
/// Throws `ERR_STATESEAL_ROUND` if the body is gone (parse it again), never
/// for a malformed request: its verify and mint do.
#[napi]
#[allow(clippy::too_many_arguments)] // positional: cheaper to convert than an object
pub fn envelope_name(
    #[napi(ts_arg_type = "ExternalObject<'Envelope'>")] envelope: &External<EnvelopeCore>,
    round: i64,
    body: i64,
    method: String,
    #[napi(ts_arg_type = "number | string")] id: Either<f64, String>,
    principal_text: Option<String>,
    client_id: Option<String>,
    issuer: Option<String>,
    subject: Option<String>,
) -> std::result::Result<(), Error<Code>> {
    open(&envelope.shared)?;
    let principal = PrincipalKey::of(principal_text, client_id, issuer, subject);
    name(envelope, round, body, method, RoundId::of(id), principal).map(drop)
}

/// Names the round `round` of the parsed body `body` (see `envelopeName`).
fn name(
    envelope: &EnvelopeCore,
    round: i64,
    body: i64,
    method: String,
    id: RoundId,
    principal: PrincipalKey,
) -> std::result::Result<Arc<Round>, Error<Code>> {
    let round = u64::try_from(round)
        .ok()
        .filter(|r| *r > 0)
        .ok_or_else(|| fail(Code::Config, "round: expected a positive whole number"))?;
    let batch = u64::try_from(body)
        .ok()
        .and_then(|h| envelope.requests.body(h))
        .ok_or_else(|| fail(Code::Round, "the request is gone"))?;
    Ok(envelope.requests.name(
        round,
        &RoundKey {
            batch,
            method,
            id,
            principal,
        },
    ))
}

/// `now` (seconds since 1970, from the application's clock), or the
/// envelope's own when JavaScript leaves it out: the wall clock the Rust
/// servers stamp with, read without a call back into JavaScript.
fn at(now: Option<f64>) -> f64 {
    now.unwrap_or_else(|| SystemClock.now())
}

/// A handle as a JavaScript number (handles stay below 2^53: exact).
fn handle_number(handle: u64) -> i64 {
    i64::try_from(handle).unwrap_or(i64::MAX)
}

/// Seals `state` for `round` at `now` (see [`at`]): the token, as Latin-1.
fn mint(
    envelope: &EnvelopeCore,
    engine: &Engine,
    round: &Round,
    state: &[u8],
    now: Option<f64>,
) -> std::result::Result<Latin1String, Error<Code>> {
    let id = identity(round)?;
    let p = round.principal.as_ref();
    let single_use = engine.running.as_ref().is_some_and(|r| r.is_single_use(id));
    if single_use {
        envelope.envelope.mint_single_use_at(id, state, p, at(now))
    } else {
        envelope.envelope.mint_at(id, state, p, at(now))
    }
    .map(Latin1String::from)
    .map_err(|e| thrown(&e))
}

/// Seals `state` for the round `round` names, at `now` (seconds; the system clock when left out).
#[napi(ts_return_type = "string")]
pub fn envelope_mint(
    #[napi(ts_arg_type = "ExternalObject<'Envelope'>")] envelope: &External<EnvelopeCore>,
    round: i64,
    #[napi(ts_arg_type = "Uint8Array")] state: &[u8],
    state_len: u32,
    now: Option<f64>,
) -> std::result::Result<Latin1String, Error<Code>> {
    let engine = open(&envelope.shared)?;
    mint(
        envelope,
        &engine,
        &*round_of(envelope, round)?,
        encoded(state, state_len)?,
        now,
    )
}

/// `envelopeName` and `envelopeMint` in one call: a round's first call, when
/// it is a mint.
#[napi(ts_return_type = "string")]
#[allow(clippy::too_many_arguments)] // positional: cheaper to convert than an object
pub fn envelope_mint_named(
    #[napi(ts_arg_type = "ExternalObject<'Envelope'>")] envelope: &External<EnvelopeCore>,
    round: i64,
    body: i64,
    method: String,
    #[napi(ts_arg_type = "number | string")] id: Either<f64, String>,
    principal_text: Option<String>,
    client_id: Option<String>,
    issuer: Option<String>,
    subject: Option<String>,
    #[napi(ts_arg_type = "Uint8Array")] state: &[u8],
    state_len: u32,
    now: Option<f64>,
) -> std::result::Result<Latin1String, Error<Code>> {
    let engine = open(&envelope.shared)?;
    let principal = PrincipalKey::of(principal_text, client_id, issuer, subject);
    let round = name(envelope, round, body, method, RoundId::of(id), principal)?;
    mint(envelope, &engine, &round, encoded(state, state_len)?, now)
}

/// The state `token` carries, if it was minted for the round `round` names
/// (request, caller, audience) and has not expired at `now` (the system clock when left out). Refuses
/// single-use states (`replay store unavailable`): `envelopeOpen` accepts
/// them once recorded.
#[napi(ts_return_type = "string")]
pub fn envelope_verify(
    #[napi(ts_arg_type = "ExternalObject<'Envelope'>")] envelope: &External<EnvelopeCore>,
    round: i64,
    #[napi(ts_arg_type = "Uint8Array")] token: &[u8],
    token_len: u32,
    now: Option<f64>,
) -> std::result::Result<Either<Latin1String, String>, Error<Code>> {
    open(&envelope.shared)?;
    let round = round_of(envelope, round)?;
    let text = envelope
        .envelope
        .verify_at(
            identity(&round)?,
            token_of(encoded(token, token_len)?)?,
            round.principal.as_ref(),
            at(now),
        )
        .map_err(|e| thrown(&e))?;
    text.into_string()
        .map(js_text)
        .map_err(|_| fail(Code::Rejected, "malformed"))
}

/// What `envelopeOpen` gives: a multi-use state's text, or a single-use
/// state's pending record.
type Opened = Either3<Latin1String, String, NativeSingleUse>;

fn open_in(
    envelope: &EnvelopeCore,
    round: &Round,
    token: &[u8],
    now: Option<f64>,
) -> std::result::Result<Opened, Error<Code>> {
    let (text, once) = envelope
        .envelope
        .open_at(
            identity(round)?,
            token_of(token)?,
            round.principal.as_ref(),
            at(now),
        )
        .map_err(|e| thrown(&e))?;
    let text = text
        .into_string()
        .map_err(|_| fail(Code::Rejected, "malformed"))?;
    Ok(match once {
        None => match js_text(text) {
            Either::A(latin1) => Either3::A(latin1),
            Either::B(text) => Either3::B(text),
        },
        Some(once) => Either3::C(NativeSingleUse::new(
            Arc::clone(&envelope.shared),
            once,
            text,
        )),
    })
}

/// As `envelopeVerify`, and single-use states too: a multi-use state's text
/// comes back at once (no store call, no thread hop); a single-use state
/// comes back as a [`NativeSingleUse`], whose `record()` gives the text only
/// once the replay store has recorded it.
#[napi(ts_return_type = "string | NativeSingleUse")]
pub fn envelope_open(
    #[napi(ts_arg_type = "ExternalObject<'Envelope'>")] envelope: &External<EnvelopeCore>,
    round: i64,
    #[napi(ts_arg_type = "Uint8Array")] token: &[u8],
    token_len: u32,
    now: Option<f64>,
) -> std::result::Result<Opened, Error<Code>> {
    open(&envelope.shared)?;
    open_in(
        envelope,
        &*round_of(envelope, round)?,
        encoded(token, token_len)?,
        now,
    )
}

/// `envelopeName` and `envelopeOpen` in one call: a round's first call, when
/// it is a verify.
#[napi(ts_return_type = "string | NativeSingleUse")]
#[allow(clippy::too_many_arguments)] // positional: cheaper to convert than an object
pub fn envelope_open_named(
    #[napi(ts_arg_type = "ExternalObject<'Envelope'>")] envelope: &External<EnvelopeCore>,
    round: i64,
    body: i64,
    method: String,
    #[napi(ts_arg_type = "number | string")] id: Either<f64, String>,
    principal_text: Option<String>,
    client_id: Option<String>,
    issuer: Option<String>,
    subject: Option<String>,
    #[napi(ts_arg_type = "Uint8Array")] token: &[u8],
    token_len: u32,
    now: Option<f64>,
) -> std::result::Result<Opened, Error<Code>> {
    open(&envelope.shared)?;
    let principal = PrincipalKey::of(principal_text, client_id, issuer, subject);
    let round = name(envelope, round, body, method, RoundId::of(id), principal)?;
    open_in(envelope, &round, encoded(token, token_len)?, now)
}
