//! A round's arguments through a frame: a buffer JavaScript attaches once per
//! thread, writes each call's numbers and texts into, and then calls the
//! envelope with no arguments.
//!
//! Why: napi-rs opens a borrow scope for any call that has arguments (an
//! allocation and a thread-local stack) and checks and converts each
//! argument through Node-API; a call without arguments skips all of it.
//! Measured on a 64 B round: a call of one number cost 135 ns against 40 ns
//! for one of none, and the round's two calls (17 arguments) about 0.7 µs.
//!
//! The frame is JavaScript's: a plain (not shared, not resizable)
//! `ArrayBuffer` no other code holds. The thread's frame is the one attached
//! last; several copies of the JavaScript module on one thread (vm contexts)
//! each attach their own. So that a call never reads another copy's frame, each
//! call counts up the frame's first number and the envelope takes a frame's
//! arguments only when that number is one past the last it took from it;
//! otherwise it refuses with `ERR_STATESEAL_FRAME` and JavaScript attaches its
//! frame again.

use std::cell::RefCell;

use napi::bindgen_prelude::{Error, Uint8Array};
use napi::{Env, sys};
use napi_derive::napi;

use crate::{Code, fail};

/// Bytes before a frame's texts: 16 numbers (native-endian `f64`, as
/// JavaScript's `Float64Array` writes them), of which [`Slot`] names those in use.
pub(crate) const HEADER: usize = 128;

/// A number of the header, by its index (the JavaScript half, `frame.cjs`, has the same list).
#[derive(Clone, Copy)]
pub(crate) enum Slot {
    /// Counts the calls made through this frame.
    Seq = 0,
    /// The envelope, by its number.
    Envelope,
    /// The round, by its number.
    Round,
    /// The parsed body's handle (a round's first call).
    Body,
    /// Bytes of the call's text (the state or the token).
    Text,
    /// Seconds since 1970 (`NaN`: the system clock).
    Now,
    /// The JSON-RPC id when it is a number.
    IdNumber,
    /// Bytes of the id's JSON (−1: the id is the number).
    IdJson,
    /// The method: 1 `tools/call`, 2 `prompts/get`, 3 `resources/read`, 0 a text.
    Method,
    /// Bytes of the method's text.
    MethodText,
    /// The principal: 0 none, 1 a text of its own, 2 client id, issuer and subject.
    Principal,
    /// Bytes of the principal's text, or of its client id.
    PrincipalText,
    /// Bytes of the issuer (−1: none).
    Issuer,
    /// Bytes of the subject (−1: none).
    Subject,
}

/// The attached frame, and the count of the last call taken from it.
struct Attached {
    frame: Uint8Array,
    seen: f64,
    /// The environment the frame was attached in, for making the strings a call returns.
    env: sys::napi_env,
}

thread_local! {
    static FRAME: RefCell<Option<Attached>> = const { RefCell::new(None) };
}

/// Attaches `frame` as this thread's (see the module's docs): at least
/// 128 bytes, its first number the count of calls made through it.
#[napi]
pub fn frame_attach(
    env: Env,
    #[napi(ts_arg_type = "Uint8Array")] frame: Uint8Array,
) -> std::result::Result<(), Error<Code>> {
    if frame.len() < HEADER {
        return Err(fail(
            Code::Config,
            format!("frame: expected at least {HEADER} bytes"),
        ));
    }
    let seen = Frame(&frame, env.raw()).number(Slot::Seq);
    FRAME.with(|f| {
        *f.borrow_mut() = Some(Attached {
            frame,
            seen,
            env: env.raw(),
        })
    });
    Ok(())
}

/// A frame's bytes as one call reads them.
pub(crate) struct Frame<'a>(&'a [u8], sys::napi_env);

impl<'a> Frame<'a> {
    /// The environment of the call (the one the frame was attached in).
    pub(crate) fn env(&self) -> Env {
        Env::from_raw(self.1)
    }

    /// A header number as it is (any `f64`, `NaN` included).
    pub(crate) fn number(&self, slot: Slot) -> f64 {
        let at = slot as usize * 8;
        self.0
            .get(at..at + 8)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map_or(f64::NAN, f64::from_ne_bytes)
    }

    /// A header number that must be a whole number from 0 to 2^53.
    pub(crate) fn whole(&self, slot: Slot) -> std::result::Result<u64, Error<Code>> {
        let n = self.number(slot);
        // `as` truncates, so a whole number is one that survives the round trip
        // (cheaper than `fract`, a call into the C library's `trunc`).
        if (0.0..=9_007_199_254_740_992.0).contains(&n) && (n as u64) as f64 == n {
            Ok(n as u64)
        } else {
            Err(fail(
                Code::Config,
                "frame: expected a whole number where it holds one",
            ))
        }
    }

    /// The `len` bytes at `at` (an offset past the header), never past the frame's end.
    pub(crate) fn bytes(&self, at: usize, len: u64) -> std::result::Result<&'a [u8], Error<Code>> {
        let start = HEADER.checked_add(at);
        let end = usize::try_from(len)
            .ok()
            .zip(start)
            .and_then(|(len, start)| start.checked_add(len));
        start
            .zip(end)
            .and_then(|(start, end)| self.0.get(start..end))
            .ok_or_else(|| fail(Code::Config, "frame: a text runs past the frame's end"))
    }

    /// The text of a length slot at `*at`, moving `*at` past it; `None` when the length is −1.
    pub(crate) fn text(
        &self,
        slot: Slot,
        at: &mut usize,
    ) -> std::result::Result<Option<&'a str>, Error<Code>> {
        if self.number(slot) == -1.0 {
            return Ok(None);
        }
        let bytes = self.bytes(*at, self.whole(slot)?)?;
        *at += bytes.len();
        std::str::from_utf8(bytes)
            .map(Some)
            .map_err(|_| fail(Code::Config, "frame: a text is not UTF-8"))
    }
}

/// Runs `call` on this thread's frame, if the caller's is the attached one
/// (its count one past the last call's); `ERR_STATESEAL_FRAME` otherwise.
pub(crate) fn with_frame<R>(
    call: impl FnOnce(&Frame<'_>) -> std::result::Result<R, Error<Code>>,
) -> std::result::Result<R, Error<Code>> {
    FRAME.with(|f| {
        let mut attached = f.borrow_mut();
        let attached = attached
            .as_mut()
            .ok_or_else(|| fail(Code::Frame, "no frame attached"))?;
        let frame = Frame(&attached.frame, attached.env);
        let seq = frame.number(Slot::Seq);
        if seq != attached.seen + 1.0 {
            return Err(fail(Code::Frame, "another frame is attached"));
        }
        attached.seen = seq;
        call(&frame)
    })
}
