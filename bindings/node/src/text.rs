//! Strings across the boundary without napi's conversions where none is needed.
//!
//! Tokens and states come in as UTF-8 that JavaScript wrote into its frame
//! (`frame.rs`), so nothing is allocated or copied per call, where a string
//! argument is copied (and a UTF-8 one walked twice, character by character)
//! into a new allocation each time. A lone surrogate is written as U+FFFD,
//! as napi's own UTF-8 conversion writes it. Tokens go out as Latin-1 (a
//! copy), and states too when ASCII.

use napi::Either;
use napi::bindgen_prelude::{Error, Latin1String};

use crate::{Code, fail};

/// A token's text. One holding anything but ASCII is never a token: the
/// codec refuses it as malformed (its prefix, key id and base64url are ASCII),
/// so it is not checked twice here.
pub(crate) fn token_of(bytes: &[u8]) -> Result<&str, Error<Code>> {
    std::str::from_utf8(bytes).map_err(|_| fail(Code::Rejected, "malformed"))
}

/// A state's text for JavaScript: Latin-1 (a copy) when ASCII.
pub(crate) fn js_text(text: String) -> Either<Latin1String, String> {
    if text.is_ascii() {
        Either::A(Latin1String::from(text))
    } else {
        Either::B(text)
    }
}
