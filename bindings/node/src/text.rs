//! Strings across the boundary without UTF-8 where none is needed.
//!
//! napi's UTF-8 conversions walk a string twice (its UTF-8 length, then the
//! copy), character by character; at 16 KiB they cost more than sealing.
//! Strings come in as UTF-16 (a copy, widened, with the length known) and are
//! narrowed here when ASCII, as tokens and most states are; tokens go out as
//! Latin-1 (a copy), and states too when ASCII.

use napi::Either;
use napi::bindgen_prelude::{Error, Latin1String, Utf16String};

use crate::{Code, fail};

/// A token's text; one holding anything but ASCII is never a token: refused
/// as malformed, never read another way.
pub(crate) fn token_of(units: &Utf16String) -> Result<String, Error<Code>> {
    narrow(units)
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(|| fail(Code::Rejected, "malformed"))
}

/// A state's text as UTF-8 bytes (the envelope seals bytes: an ASCII state
/// is not validated a second time); a lone surrogate becomes U+FFFD, as
/// napi's own UTF-8 conversion makes it.
pub(crate) fn text_of(units: &Utf16String) -> Vec<u8> {
    narrow(units).unwrap_or_else(|| String::from_utf16_lossy(units).into_bytes())
}

/// A state's text for JavaScript: Latin-1 (a copy) when ASCII.
pub(crate) fn js_text(text: String) -> Either<Latin1String, String> {
    if text.is_ascii() {
        Either::A(Latin1String::from(text))
    } else {
        Either::B(text)
    }
}

/// The units narrowed to bytes when every one is ASCII. One pass to check
/// (an OR over all units, which vectorises) and one to narrow.
fn narrow(units: &[u16]) -> Option<Vec<u8>> {
    if units.iter().fold(0u16, |all, u| all | u) >= 0x80 {
        return None;
    }
    Some(units.iter().map(|&u| u as u8).collect())
}
