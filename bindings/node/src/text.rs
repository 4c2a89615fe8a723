//! Strings across the boundary without napi's conversions where none is needed.
//!
//! Tokens and states come in as UTF-8 that JavaScript wrote into its frame
//! (`frame.rs`), so nothing is allocated or copied per call, where a string
//! argument is copied (and a UTF-8 one walked twice, character by character)
//! into a new allocation each time. A lone surrogate is written as U+FFFD,
//! as napi's own UTF-8 conversion writes it. Tokens go out as Latin-1 (a
//! copy), and states too when ASCII.

use napi::bindgen_prelude::Error;
use napi::{Env, JsValue, sys};

use crate::{Code, fail};

/// A token's text. One holding anything but ASCII is never a token: the
/// codec refuses it as malformed (its prefix, key id and base64url are ASCII),
/// so it is not checked twice here.
pub(crate) fn token_of(bytes: &[u8]) -> Result<&str, Error<Code>> {
    std::str::from_utf8(bytes).map_err(|_| fail(Code::Rejected, "malformed"))
}

/// A state's text for JavaScript: copied into a V8 string, as Latin-1 when
/// ASCII (one pass, no UTF-8 decoding), else as UTF-8; a lone surrogate
/// (WTF-8, which no JavaScript string from this codec holds) is malformed.
pub(crate) fn js_text(env: Env, state: &[u8]) -> Result<sys::napi_value, Error<Code>> {
    if state.is_ascii() {
        return latin1(env, state);
    }
    let text = std::str::from_utf8(state).map_err(|_| fail(Code::Rejected, "malformed"))?;
    env.create_string(text)
        .map(|s| s.raw())
        .map_err(|e| fail(Code::Unavailable, e.reason.clone()))
}

/// A JavaScript string of Latin-1 `bytes` (a copy into V8's heap).
pub(crate) fn latin1(env: Env, bytes: &[u8]) -> Result<sys::napi_value, Error<Code>> {
    env.create_string_latin1(bytes)
        .map(|s| s.raw())
        .map_err(|e| fail(Code::Unavailable, e.reason.clone()))
}
