//! Writing and checking the claims payload.

use crate::error::{DataError, Error};
use std::borrow::Cow;
use std::ops::Range;

use zeroize::{Zeroize, Zeroizing};

use crate::json::{
    Cursor, Scalar, Text, is_plain_ascii, json_string_len, parse_flat_object_with,
    push_classified_json_string, push_json_float,
};
use crate::reason::RejectReason;
use std::time::Duration;

use super::identity::RequestIdentity;
use super::principal::{self, Principal};
use super::single_use::SingleUseId;

/// The claims envelope version.
pub const ENVELOPE_VERSION: u32 = 1;
/// How far in the future `iat` may lie by default (clock skew between
/// instances): the Python SDK's fixed 60 s.
pub const FUTURE_SKEW: Duration = Duration::from_secs(60);
/// [`FUTURE_SKEW`] in the seconds the claims are compared in.
#[cfg(test)]
pub(crate) const FUTURE_SKEW_SECS: f64 = FUTURE_SKEW.as_secs_f64();

/// Everything one minted payload says, borrowed.
pub(crate) struct MintClaims<'a> {
    pub(crate) iat: f64,
    pub(crate) exp: f64,
    pub(crate) identity: &'a RequestIdentity,
    pub(crate) state: &'a [u8],
    /// Whether `state` is plain (`is_plain_ascii`), as the minter found
    /// out for its UTF-8 check: a state is scanned once, not twice. `false`
    /// for a plain state is correct, only slower (every byte is escaped as
    /// needed); `true` for one that is not would write invalid JSON.
    pub(crate) state_plain: bool,
    pub(crate) audience: Option<&'a str>,
    pub(crate) principal_claim: Option<&'a str>,
    /// The single-use id claim `u` (base64url), written last.
    pub(crate) single_use: Option<&'a str>,
}

/// What a verified payload gives: the state, its single-use id if it has
/// one, and its expiry.
#[cfg_attr(test, derive(Debug, PartialEq))]
pub(crate) struct Checked {
    pub(crate) state: Text,
    pub(crate) single_use: Option<SingleUseId>,
    pub(crate) iat: f64,
    pub(crate) exp: f64,
}

/// `{"v":1,"iat":..,"exp":..,"m":..,"t":..,"a":..,"s":..[,"aud":..][,"p":..]}` in the
/// Python SDK's key order and encoding, after `headroom` zero bytes (room for the
/// codec's header), with capacity for `tailroom` more bytes (its tag), so that
/// sealing in place never reallocates. Written into `out` (empty; its capacity is reused).
///
/// The room is reserved once, from the strings' exact escaped lengths: a
/// buffer that grew while being written would leave a copy of the plaintext
/// written so far in the memory it released.
pub(crate) fn write_payload<'a>(
    c: &MintClaims<'a>,
    headroom: usize,
    tailroom: usize,
    mut out: Vec<u8>,
) -> Vec<u8> {
    // Each string is classified once: its exact length, then its writing.
    let classify = |s: &'a [u8]| {
        let plain = is_plain_ascii(s);
        (s, plain, json_string_len(s, plain))
    };
    let method = classify(c.identity.method().as_bytes());
    let target = classify(c.identity.target().as_bytes());
    debug_assert!(
        !c.state_plain || is_plain_ascii(c.state),
        "a state the minter calls plain is plain"
    );
    let state = (
        c.state,
        c.state_plain,
        json_string_len(c.state, c.state_plain),
    );
    let audience = c.audience.map(|a| classify(a.as_bytes()));
    // Literals, two floats and the digest's and principal's quotes fit in 128 bytes.
    let strings = method.2
        + target.2
        + state.2
        + audience.map_or(0, |a| a.2)
        + c.identity.args_digest_bytes().len()
        + c.principal_claim.map_or(0, str::len)
        + c.single_use.map_or(0, str::len);
    out.clear();
    out.reserve(headroom + 128 + strings + tailroom);
    out.resize(headroom, 0);
    out.extend_from_slice(b"{\"v\":1,\"iat\":");
    push_json_float(c.iat, &mut out);
    out.extend_from_slice(b",\"exp\":");
    push_json_float(c.exp, &mut out);
    out.extend_from_slice(b",\"m\":");
    push_classified_json_string(method.0, method.1, &mut out);
    out.extend_from_slice(b",\"t\":");
    push_classified_json_string(target.0, target.1, &mut out);
    out.extend_from_slice(b",\"a\":\"");
    out.extend_from_slice(c.identity.args_digest_bytes());
    out.extend_from_slice(b"\",\"s\":");
    push_classified_json_string(state.0, state.1, &mut out);
    if let Some((aud, plain, _)) = audience {
        out.extend_from_slice(b",\"aud\":");
        push_classified_json_string(aud, plain, &mut out);
    }
    if let Some(p) = c.principal_claim {
        out.extend_from_slice(b",\"p\":\"");
        out.extend_from_slice(p.as_bytes());
        out.push(b'"');
    }
    if let Some(u) = c.single_use {
        out.extend_from_slice(b",\"u\":\"");
        out.extend_from_slice(u.as_bytes());
        out.push(b'"');
    }
    out.push(b'}');
    out
}

fn reject(r: RejectReason) -> Error {
    Error::Rejected(r)
}

/// A JSON number as `f64` (integers of any size included); booleans are not numbers.
fn number(v: Option<&Scalar<'_>>) -> Option<f64> {
    match v? {
        Scalar::Int(lexeme) => lexeme.parse().ok(),
        Scalar::Float(f) => Some(*f),
        _ => None,
    }
}

/// Python's `claims.get(k)` compared with `None`: an absent member or JSON null is `None`.
fn present<'c, 'a>(v: Option<&'c Scalar<'a>>) -> Option<&'c Scalar<'a>> {
    v.filter(|v| !matches!(v, Scalar::Null))
}

fn str_eq(v: Option<&Scalar<'_>>, expected: &[u8]) -> bool {
    matches!(v, Some(Scalar::Str(t)) if t.as_ref() == expected)
}

/// Checks a decrypted payload against the request and returns the inner state
/// and its `iat`. `buffer[at]` is the payload.
///
/// The decrypted payload is wiped before its memory is freed, whatever the
/// verdict: a refused state is what an attacker presents. Only an accepted
/// state leaves, as the caller's.
pub(crate) fn check(
    buffer: Vec<u8>,
    at: Range<usize>,
    identity: &RequestIdentity,
    audience: Option<&str>,
    principal: Option<&Principal>,
    now: f64,
    max_skew: f64,
) -> Result<Checked, Error> {
    let mut buffer = Zeroizing::new(buffer);
    let payload = buffer
        .get(at.clone())
        .ok_or(reject(RejectReason::CodecError))?;
    // The shortcut never accepts a payload with a single-use claim (it is
    // written after the layout the shortcut reads), so those take the general check.
    let (state, iat, exp) =
        match check_minted_layout(payload, identity, audience, principal, now, max_skew) {
            Some((StateAt::Range(state), iat, exp)) => {
                // Reuse the decrypted buffer for the state instead of allocating a copy;
                // the claims after it are wiped, not left in its spare capacity.
                let len = state.len();
                buffer.copy_within(at.start + state.start..at.start + state.end, 0);
                buffer[len..].zeroize();
                buffer.truncate(len);
                (
                    Text::from_wtf8_unchecked(std::mem::take(&mut *buffer)),
                    iat,
                    exp,
                )
            }
            Some((StateAt::Owned(state), iat, exp)) => (Text::from_wtf8_unchecked(state), iat, exp),
            None => return check_any_layout(payload, identity, audience, principal, now, max_skew),
        };
    Ok(Checked {
        state,
        single_use: None,
        iat,
        exp,
    })
}

/// Where an accepted state is: a range of the payload, or decoded from escapes.
enum StateAt {
    Range(Range<usize>),
    Owned(Vec<u8>),
}

// The accept-conditions on times are stated positively so NaN fails them;
// infinities are refused too (Python accepts them, but never mints them).

/// `iat` at most `max_skew` ([`FUTURE_SKEW`] unless configured) ahead of `now`.
fn iat_ok(iat: f64, now: f64, max_skew: f64) -> bool {
    iat.is_finite() && iat <= now + max_skew
}

/// `now` before `exp`.
fn exp_ok(exp: f64, now: f64) -> bool {
    exp.is_finite() && now < exp
}

/// Accepts a payload in the exact layout both SDKs mint (`write_payload`'s key
/// order, no whitespace, no escapes in `m`, `t`, `a`, `aud`, `p`) that passes
/// every check, reading it literal by literal. `None` means "not decided here":
/// the general check then gives the same acceptance or the exact rejection
/// reason, so this is purely a shortcut (a test compares the two on mutations).
fn check_minted_layout(
    payload: &[u8],
    identity: &RequestIdentity,
    audience: Option<&str>,
    principal: Option<&Principal>,
    now: f64,
    max_skew: f64,
) -> Option<(StateAt, f64, f64)> {
    let mut c = Cursor::new(payload);
    fn plain_eq<const N: usize>(c: &mut Cursor<'_>, lit: &[u8; N], expected: &[u8]) -> bool {
        c.literal(lit) && c.plain_string_eq(expected)
    }
    if !c.literal(b"{\"v\":1,\"iat\":") {
        return None;
    }
    let iat = number(c.number().as_ref())?;
    if !c.literal(b",\"exp\":") {
        return None;
    }
    let exp = number(c.number().as_ref())?;
    if !iat_ok(iat, now, max_skew)
        || !exp_ok(exp, now)
        || !plain_eq(&mut c, b",\"m\":", identity.method().as_bytes())
        || !plain_eq(&mut c, b",\"t\":", identity.target().as_bytes())
        || !plain_eq(&mut c, b",\"a\":", identity.args_digest_bytes())
        || !c.literal(b",\"s\":")
    {
        return None;
    }
    let state_at = c.position();
    // The claims after the state have known lengths, so a plain state's closing
    // quote is at a known place: checking the body then finds its end too.
    let state_end = payload
        .len()
        .checked_sub(1 + tail_len(audience, principal.is_some()));
    let state = match c.string(state_end)? {
        Cow::Borrowed(_) => StateAt::Range(state_at + 1..c.position() - 1),
        Cow::Owned(decoded) => StateAt::Owned(decoded),
    };
    let rest_ok = audience
        .is_none_or(|expected| plain_eq(&mut c, b",\"aud\":", expected.as_bytes()))
        && principal.is_none_or(|p| {
            c.literal(b",\"p\":")
                .then(|| c.plain_string())
                .flatten()
                // A plain string is ASCII, so this conversion cannot fail.
                .is_some_and(|claim| {
                    std::str::from_utf8(claim).is_ok_and(|claim| principal::matches(claim, p))
                })
        })
        && c.literal(b"}")
        && c.at_end();
    if !rest_ok {
        // A state decoded from escapes is a copy of the plaintext: wiped.
        if let StateAt::Owned(mut decoded) = state {
            decoded.zeroize();
        }
        return None;
    }
    Some((state, iat, exp))
}

/// Length of what `write_payload` writes after the state's closing quote, for
/// a plain audience: `,"aud":"…"`, `,"p":"…"` and the closing brace.
fn tail_len(audience: Option<&str>, principal: bool) -> usize {
    let aud = audience.map_or(0, |a| b",\"aud\":\"\"".len() + a.len());
    let p = if principal {
        b",\"p\":\"\"".len() + principal::CLAIM_LEN
    } else {
        0
    };
    aud + p + 1
}

/// Wipes a string the parser decoded from escapes (a copy of plaintext).
fn wipe(value: Option<Scalar<'_>>) {
    if let Some(Scalar::Str(Cow::Owned(mut bytes))) = value {
        bytes.zeroize();
    }
}

/// Checks a payload in any layout, in the Python SDK's order. Every string
/// the parser decoded from escapes is wiped before it is freed; the state,
/// when accepted, leaves as the caller's.
fn check_any_layout(
    payload: &[u8],
    identity: &RequestIdentity,
    audience: Option<&str>,
    principal: Option<&Principal>,
    now: f64,
    max_skew: f64,
) -> Result<Checked, Error> {
    // One pass files each known claim; any repeated key (known or not) is refused.
    let mut c: [Option<Scalar<'_>>; 10] = Default::default();
    // Hashed, so a payload of many short unknown keys stays linear.
    let mut unknown: std::collections::HashSet<std::borrow::Cow<'_, [u8]>> =
        std::collections::HashSet::new();
    let verdict = judge_any_layout(
        payload,
        &mut c,
        &mut unknown,
        (identity, audience, principal),
        now,
        max_skew,
    );
    c.into_iter().for_each(wipe);
    for key in unknown.drain() {
        wipe(Some(Scalar::Str(key)));
    }
    verdict
}

/// What the round expects: its identity, the audience and the principal.
type Expected<'r> = (&'r RequestIdentity, Option<&'r str>, Option<&'r Principal>);

/// [`check_any_layout`]'s parse and checks, filing what it decodes in
/// `c` and `unknown` (which the caller wipes); an accepted state is taken out of `c`.
fn judge_any_layout<'a>(
    payload: &'a [u8],
    c: &mut [Option<Scalar<'a>>; 10],
    unknown: &mut std::collections::HashSet<std::borrow::Cow<'a, [u8]>>,
    (identity, audience, principal): Expected<'_>,
    now: f64,
    max_skew: f64,
) -> Result<Checked, Error> {
    parse_flat_object_with(payload, |key, value, at| {
        let slot = match key.as_ref() {
            b"v" => 0,
            b"iat" => 1,
            b"exp" => 2,
            b"m" => 3,
            b"t" => 4,
            b"a" => 5,
            b"s" => 6,
            b"aud" => 7,
            b"p" => 8,
            b"u" => 9,
            // Unknown claims are ignored, as in Python, but still may not repeat.
            _ => {
                wipe(Some(value));
                return if unknown.contains(&key) {
                    wipe(Some(Scalar::Str(key)));
                    Err(Error::Data(DataError::InvalidJson { offset: at }))
                } else {
                    unknown.insert(key);
                    Ok(())
                };
            }
        };
        if let Some(earlier) = c[slot].replace(value) {
            wipe(Some(earlier));
            return Err(Error::Data(DataError::InvalidJson { offset: at }));
        }
        Ok(())
    })
    .map_err(|_| reject(RejectReason::Malformed))?;
    let [v, iat, exp, m, t, a, s, aud, p, u] = c.each_ref().map(Option::as_ref);
    let (Some(v), Some(iat), Some(exp), Some(s)) = (v, iat, exp, s) else {
        return Err(reject(RejectReason::Malformed));
    };
    // Stricter than Python: only the integer 1 is version 1 (not `true`, not `1.0`).
    let Scalar::Str(_) = s else {
        return Err(reject(RejectReason::Malformed));
    };
    if *v != Scalar::Int("1") {
        return Err(reject(RejectReason::Malformed));
    }
    let Some(iat) = number(Some(iat)).filter(|&iat| iat_ok(iat, now, max_skew)) else {
        return Err(reject(RejectReason::MintedInFuture));
    };
    let exp = number(Some(exp)).filter(|exp| exp_ok(*exp, now));
    let Some(exp) = exp else {
        return Err(reject(RejectReason::Expired));
    };
    if !str_eq(m, identity.method().as_bytes())
        || !str_eq(t, identity.target().as_bytes())
        || !str_eq(a, identity.args_digest_bytes())
    {
        return Err(reject(RejectReason::RequestBinding));
    }
    let aud_ok = match (present(aud), audience) {
        (None, None) => true,
        (Some(claim), Some(expected)) => str_eq(Some(claim), expected.as_bytes()),
        _ => false,
    };
    if !aud_ok {
        return Err(reject(RejectReason::Audience));
    }
    match (present(p), principal) {
        (None, None) => {}
        (Some(Scalar::Str(claim)), Some(p)) => {
            let ok = std::str::from_utf8(claim).is_ok_and(|c| principal::matches(c, p));
            if !ok {
                return Err(reject(RejectReason::Principal));
            }
        }
        (Some(_), Some(_)) => return Err(reject(RejectReason::Principal)),
        _ => return Err(reject(RejectReason::PrincipalDrift)),
    }
    // Checked last, as the replay check that follows: a state whose other
    // claims fail is refused for them whatever its `u`.
    let single_use = match present(u) {
        None => None,
        Some(Scalar::Str(id)) => {
            Some(SingleUseId::parse(id).ok_or(reject(RejectReason::Malformed))?)
        }
        Some(_) => return Err(reject(RejectReason::Malformed)),
    };
    let state = match c[6].take() {
        Some(Scalar::Str(state)) => state.into_owned(),
        _ => return Err(reject(RejectReason::Malformed)),
    };
    Ok(Checked {
        state: Text::from_wtf8_unchecked(state),
        single_use,
        iat,
        exp,
    })
}

#[cfg(test)]
mod tests;
