//! The per-round calls: each reads its arguments from the thread's frame.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;
use stateseal::{Clock, MintOptions, OpenOptions, SystemClock, UnixTime};
use zeroize::Zeroize;

use super::EnvelopeCore;
use super::table::{EnvelopeTicket, envelope_of};
use crate::frame::{Frame, Slot, with_frame};
use crate::single_use::NativeSingleUse;
use crate::text::{js_text, latin1, token_of};
use crate::{Code, Engine, fail, thrown, with_open};
use stateseal_binding::rounds::{PrincipalKey, Round, RoundId, RoundKey};

fn identity(round: &Round) -> std::result::Result<&stateseal::RequestIdentity, Error<Code>> {
    round.identity.as_ref().map_err(thrown)
}

/// The round the frame names, or `ERR_STATESEAL_ROUND` when a later round
/// took its slot (JavaScript then names the round again).
fn round_of(
    envelope: &EnvelopeCore,
    frame: &Frame<'_>,
) -> std::result::Result<Rc<Round>, Error<Code>> {
    let handle = frame.whole(Slot::Round)?;
    envelope
        .requests
        .round(handle)
        .ok_or_else(|| fail(Code::Round, "the round is gone"))
}

/// Parses an HTTP `body` (one JSON-RPC message or a batch) once for all its
/// rounds; the handle names it to the named calls. Never throws: a body that
/// is not JSON-RPC makes every round of it malformed.
#[napi]
pub fn envelope_parse(
    #[napi(ts_arg_type = "ExternalObject<'Envelope'>")] envelope: &External<EnvelopeTicket>,
    body: String,
) -> i64 {
    i64::try_from(envelope.core.requests.parse(&body)).unwrap_or(i64::MAX)
}

/// The method a frame names: by its code, or as its text.
fn method_of<'f>(frame: &Frame<'f>, at: &mut usize) -> std::result::Result<&'f str, Error<Code>> {
    Ok(match frame.number(Slot::Method) {
        1.0 => "tools/call",
        2.0 => "prompts/get",
        3.0 => "resources/read",
        _ => frame.text(Slot::MethodText, at)?.unwrap_or_default(),
    })
}

/// Names the round the frame names (its number, unique among this
/// envelope's rounds, of the parsed body the frame's handle names, with the
/// method, JSON-RPC id and principal the frame holds after the call's text).
/// Its identity is worked out now, once for the round's verify and mint.
/// `ERR_STATESEAL_ROUND` if the body is gone (parse it again), never for a
/// malformed request: its verify and mint refuse.
fn name(envelope: &EnvelopeCore, frame: &Frame<'_>) -> std::result::Result<Rc<Round>, Error<Code>> {
    let round = frame.whole(Slot::Round)?;
    if round == 0 {
        return Err(fail(
            Code::Config,
            "round: expected a positive whole number",
        ));
    }
    let batch = envelope
        .requests
        .body(frame.whole(Slot::Body)?)
        .ok_or_else(|| fail(Code::Round, "the request is gone"))?;
    // The naming texts follow the call's text.
    let mut at = usize::try_from(frame.whole(Slot::Text)?).unwrap_or(usize::MAX);
    let method = method_of(frame, &mut at)?;
    let id = match frame.text(Slot::IdJson, &mut at)? {
        Some(json) => RoundId::Json(json),
        None => RoundId::Number(frame.number(Slot::IdNumber)),
    };
    let principal = match frame.number(Slot::Principal) {
        0.0 => PrincipalKey::None,
        1.0 => PrincipalKey::Text(
            frame
                .text(Slot::PrincipalText, &mut at)?
                .unwrap_or_default(),
        ),
        2.0 => PrincipalKey::Parts(
            frame
                .text(Slot::PrincipalText, &mut at)?
                .unwrap_or_default(),
            frame.text(Slot::Issuer, &mut at)?,
            frame.text(Slot::Subject, &mut at)?,
        ),
        _ => return Err(fail(Code::Config, "frame: no such kind of principal")),
    };
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

/// The call's text: the state or the token, as UTF-8.
fn text_of<'f>(frame: &Frame<'f>) -> std::result::Result<&'f [u8], Error<Code>> {
    frame.bytes(0, frame.whole(Slot::Text)?)
}

/// The frame's `now` (seconds since 1970, from the application's clock), or
/// the system clock's when it holds `NaN`: the wall clock the Rust servers
/// stamp with, read without a call back into JavaScript. An infinity is no
/// time: refused as the JavaScript half refuses a clock's `NaN` (a time
/// before 1970 is one, as it was).
fn at(frame: &Frame<'_>) -> std::result::Result<UnixTime, Error<Code>> {
    let now = frame.number(Slot::Now);
    if now.is_nan() {
        return Ok(SystemClock.now());
    }
    UnixTime::from_secs_f64(now).ok_or_else(|| {
        fail(
            Code::Config,
            "clock: expected a function returning seconds since 1970",
        )
    })
}

/// Buffers above this capacity are not kept for the thread's next call: one
/// large state must not pin its memory to the thread.
const KEEP_AT_MOST: usize = 64 * 1024;

thread_local! {
    /// The buffer this thread's tokens are written into before V8 copies them:
    /// above the C library's per-thread cache (1,032 bytes in glibc), a
    /// token's allocation and release cost more than V8's copy of it
    /// (docs/benchmarks.md). A token is no secret.
    static TOKEN: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    /// The buffer this thread's next token is decoded into: the last
    /// state's, wiped once V8 has copied it ([`keep_wiped`]).
    static STATE: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// Seals the frame's state for `round`: the token, as a Latin-1 string.
fn mint(
    envelope: &EnvelopeCore,
    engine: &Engine,
    round: &Round,
    frame: &Frame<'_>,
) -> std::result::Result<sys::napi_value, Error<Code>> {
    let id = identity(round)?;
    let p = round.principal.as_ref();
    let state = text_of(frame)?;
    let env = frame.env();
    if engine.running.as_ref().is_some_and(|r| r.is_single_use(id)) {
        let options = MintOptions::new()
            .principal(p)
            .single_use(true)
            .at(at(frame)?);
        let token = envelope
            .envelope
            .mint(id, state, options)
            .map_err(|e| thrown(&e))?;
        latin1(env, token.as_bytes())
    } else {
        let options = MintOptions::new().principal(p).at(at(frame)?);
        kept_token(
            |token| {
                envelope
                    .envelope
                    .mint_into(id, state, options, token)
                    .map_err(|e| thrown(&e))
            },
            |token| latin1(env, token),
        )
    }
}

/// `mint` into this thread's token buffer, then `made` of the token. A buffer
/// grown past [`KEEP_AT_MOST`] is let go afterwards whether or not the mint
/// succeeded (a state refused for its size has grown it as far as its token).
fn kept_token<R>(
    mint: impl FnOnce(&mut Vec<u8>) -> std::result::Result<(), Error<Code>>,
    made: impl FnOnce(&[u8]) -> std::result::Result<R, Error<Code>>,
) -> std::result::Result<R, Error<Code>> {
    TOKEN.with_borrow_mut(|token| {
        let result = mint(token).and_then(|()| made(token));
        if token.capacity() > KEEP_AT_MOST {
            *token = Vec::new();
        }
        result
    })
}

/// Seals the frame's state for the round it names, at its `now`.
#[napi(ts_return_type = "string")]
pub fn envelope_mint() -> std::result::Result<sys::napi_value, Error<Code>> {
    with_frame(|frame| {
        let envelope = envelope_of(frame)?;
        with_open(&envelope.shared, |engine| {
            mint(&envelope, engine, &*round_of(&envelope, frame)?, frame)
        })
    })
}

/// Names the frame's round and seals its state: a round's first call, when it is a mint.
#[napi(ts_return_type = "string")]
pub fn envelope_mint_named() -> std::result::Result<sys::napi_value, Error<Code>> {
    with_frame(|frame| {
        let envelope = envelope_of(frame)?;
        with_open(&envelope.shared, |engine| {
            mint(&envelope, engine, &*name(&envelope, frame)?, frame)
        })
    })
}

/// The state the frame's token carries, if it was minted for the round the
/// frame names (request, caller, audience) and has not expired at its `now`.
/// Refuses single-use states (`replay store unavailable`): `envelopeOpen`
/// accepts them once recorded.
#[napi(ts_return_type = "string")]
pub fn envelope_verify() -> std::result::Result<sys::napi_value, Error<Code>> {
    with_frame(|frame| {
        let envelope = envelope_of(frame)?;
        with_open(&envelope.shared, |engine| {
            let round = round_of(&envelope, frame)?;
            let (id, token) = (identity(&round)?, token_of(text_of(frame)?)?);
            let options = OpenOptions::new()
                .principal(round.principal.as_ref())
                .at(at(frame)?);
            let text = envelope
                .envelope
                .open(id, token, options)
                .map_err(|e| thrown(&e))?
                .state;
            if let Err(refused) = refuse_without_claim(engine, &round) {
                keep_wiped(text.into_bytes());
                return Err(refused);
            }
            js_text(frame.env(), text.as_bytes())
        })
    })
}

/// What `envelopeOpen` gives: a multi-use state's text, or a single-use
/// state's pending record.
type Opened = Either<sys::napi_value, NativeSingleUse>;

/// Opens the frame's token for `round`: a multi-use state's text, or a
/// single-use state's pending record.
fn open_in(
    envelope: &EnvelopeCore,
    engine: &Engine,
    round: &Round,
    frame: &Frame<'_>,
) -> std::result::Result<Opened, Error<Code>> {
    // As bytes: the codec refuses any that are not a token's ASCII.
    let (id, token) = (identity(round)?, text_of(frame)?);
    // The last state's buffer, taken once nothing can fail before the decode.
    let options = OpenOptions::new()
        .principal(round.principal.as_ref())
        .at(at(frame)?)
        .records_single_use(true)
        .buffer(STATE.take());
    let stateseal::Opened {
        state: text,
        single_use: once,
        ..
    } = envelope
        .envelope
        .open(id, token, options)
        .map_err(|e| thrown(&e))?;
    let Some(once) = once else {
        if let Err(refused) = refuse_without_claim(engine, round) {
            keep_wiped(text.into_bytes());
            return Err(refused);
        }
        let value = js_text(frame.env(), text.as_bytes());
        keep_wiped(text.into_bytes());
        return value.map(Either::A);
    };
    let text = text
        .into_string()
        .map_err(|_| fail(Code::Rejected, "malformed"))?;
    Ok(Either::B(NativeSingleUse::new(
        Arc::clone(&envelope.shared),
        once,
        text,
    )))
}

/// Refuses a multi-use state of a round this instance treats as single-use
/// (minted by an instance without the setting, or before it): it would
/// verify any number of times. The caller wipes the state it refuses.
fn refuse_without_claim(engine: &Engine, round: &Round) -> std::result::Result<(), Error<Code>> {
    let id = identity(round)?;
    if engine.running.as_ref().is_some_and(|r| r.is_single_use(id)) {
        return Err(thrown(&stateseal::Error::Rejected(
            stateseal::RejectReason::MissingSingleUseClaim,
        )));
    }
    Ok(())
}

/// Wipes a state's buffer and keeps it for the thread's next token: zeros
/// over all of its capacity (the claims around the state were plaintext
/// too), which the next decode overwrites without filling it again. The
/// writes cannot be elided: the buffer outlives them. A buffer too large to
/// keep is zeroized (volatile writes, as stateseal wipes its secrets) and freed.
fn keep_wiped(mut state: Vec<u8>) {
    let capacity = state.capacity();
    if capacity > KEEP_AT_MOST {
        state.zeroize();
        return;
    }
    state.clear();
    state.resize(capacity, 0);
    STATE.set(state);
}

/// As `envelopeVerify`, and single-use states too: a multi-use state's text
/// comes back at once (no store call, no thread hop); a single-use state
/// comes back as a [`NativeSingleUse`], whose `record()` gives the text only
/// once the replay store has recorded it.
#[napi(ts_return_type = "string | NativeSingleUse")]
pub fn envelope_open() -> std::result::Result<Opened, Error<Code>> {
    with_frame(|frame| {
        let envelope = envelope_of(frame)?;
        with_open(&envelope.shared, |engine| {
            open_in(&envelope, engine, &*round_of(&envelope, frame)?, frame)
        })
    })
}

/// Names the frame's round and opens its token: a round's first call, when it is a verify.
#[napi(ts_return_type = "string | NativeSingleUse")]
pub fn envelope_open_named() -> std::result::Result<Opened, Error<Code>> {
    with_frame(|frame| {
        let envelope = envelope_of(frame)?;
        with_open(&envelope.shared, |engine| {
            open_in(&envelope, engine, &*name(&envelope, frame)?, frame)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_state_buffer_is_all_zeros_and_a_large_one_is_let_go() {
        let mut state = Vec::with_capacity(2048);
        state.extend_from_slice(b"{\"s\":\"secret state\",\"x\":1}");
        let at = state.as_ptr();
        keep_wiped(state);
        let kept = STATE.take();
        assert_eq!(
            (kept.as_ptr(), kept.len(), kept.capacity()),
            (at, 2048, 2048)
        );
        assert!(kept.iter().all(|&b| b == 0));
        // Taken: the next call on this thread decodes into a new buffer.
        assert_eq!(STATE.take().capacity(), 0);
        keep_wiped(vec![7; KEEP_AT_MOST + 1]);
        assert_eq!(STATE.take().capacity(), 0);
    }

    #[test]
    fn the_token_buffer_is_kept_unless_a_mint_grew_it_too_far() {
        use stateseal::{Envelope, KeyRing, RequestIdentity, RingHandle};
        let ring = KeyRing::from_bytes(vec![vec![7; 32]]).unwrap();
        let envelope = Envelope::builder(Arc::new(RingHandle::new(ring)), Some("svc"))
            .max_token_len(100_000)
            .build()
            .unwrap();
        let id = RequestIdentity::from_json("tools/call", br#"{"name":"t"}"#).unwrap();
        let mint = |state: &[u8]| {
            kept_token(
                |token| {
                    envelope
                        .mint_into(
                            &id,
                            state,
                            MintOptions::new().at(UnixTime::from_secs(1_800_000_000)),
                            token,
                        )
                        .map_err(|e| thrown(&e))
                },
                |token| Ok(token.len()),
            )
        };
        let len = mint(&[b'a'; 1024]).unwrap();
        let kept = TOKEN.with_borrow(Vec::capacity);
        assert!(kept >= len && len > 1024);
        // Too large for max_token_len: refused, after its token had grown the buffer.
        assert!(mint(&[b'a'; 80_000]).is_err());
        assert_eq!(TOKEN.with_borrow(Vec::capacity), 0);
        // A token past what is kept succeeds, and its buffer goes too.
        assert!(mint(&[b'a'; 60_000]).unwrap() > KEEP_AT_MOST);
        assert_eq!(TOKEN.with_borrow(Vec::capacity), 0);
    }
}
