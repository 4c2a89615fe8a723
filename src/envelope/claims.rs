//! Writing and checking the claims payload.

use crate::error::Error;
use crate::json::{Scalar, Text, parse_flat_object_with, push_json_float, push_text, push_wtf8};
use crate::reason::RejectReason;

use super::identity::RequestIdentity;
use super::principal::{self, Principal};

/// The claims envelope version.
pub const ENVELOPE_VERSION: u32 = 1;
/// How far in the future `iat` may lie (clock skew between instances), in seconds.
pub const FUTURE_SKEW_SECS: f64 = 60.0;

/// Everything one minted payload says, borrowed.
pub(crate) struct MintClaims<'a> {
    pub(crate) iat: f64,
    pub(crate) exp: f64,
    pub(crate) identity: &'a RequestIdentity,
    pub(crate) state: &'a [u8],
    pub(crate) audience: Option<&'a str>,
    pub(crate) principal_claim: Option<&'a str>,
}

/// `{"v":1,"iat":..,"exp":..,"m":..,"t":..,"a":..,"s":..[,"aud":..][,"p":..]}` in the
/// Python SDK's key order and encoding.
pub(crate) fn write_payload(c: &MintClaims<'_>) -> Vec<u8> {
    let mut out = Vec::with_capacity(96 + c.state.len() + c.identity.target().len());
    out.extend_from_slice(b"{\"v\":1,\"iat\":");
    push_json_float(c.iat, &mut out);
    out.extend_from_slice(b",\"exp\":");
    push_json_float(c.exp, &mut out);
    out.extend_from_slice(b",\"m\":");
    push_wtf8(c.identity.method().as_bytes(), &mut out);
    out.extend_from_slice(b",\"t\":");
    push_text(c.identity.target(), &mut out);
    out.extend_from_slice(b",\"a\":\"");
    out.extend_from_slice(c.identity.args_digest().as_bytes());
    out.extend_from_slice(b"\",\"s\":");
    push_wtf8(c.state, &mut out);
    if let Some(aud) = c.audience {
        out.extend_from_slice(b",\"aud\":");
        push_wtf8(aud.as_bytes(), &mut out);
    }
    if let Some(p) = c.principal_claim {
        out.extend_from_slice(b",\"p\":\"");
        out.extend_from_slice(p.as_bytes());
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

/// Checks a decrypted payload against the request, in the Python SDK's order,
/// and returns the inner state.
pub(crate) fn check(
    payload: &[u8],
    identity: &RequestIdentity,
    audience: Option<&str>,
    principal: Option<&Principal>,
    now: f64,
) -> Result<Text, Error> {
    // One pass files each known claim; any repeated key (known or not) is refused.
    let mut c: [Option<Scalar<'_>>; 9] = Default::default();
    let mut unknown: Vec<std::borrow::Cow<'_, [u8]>> = Vec::new();
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
            // Unknown claims are ignored, as in Python, but still may not repeat.
            _ if unknown.contains(&key) => return Err(Error::InvalidJson { offset: at }),
            _ => {
                unknown.push(key);
                return Ok(());
            }
        };
        if c[slot].replace(value).is_some() {
            return Err(Error::InvalidJson { offset: at });
        }
        Ok(())
    })
    .map_err(|_| reject(RejectReason::Malformed))?;
    let [v, iat, exp, m, t, a, s, aud, p] = c.each_ref().map(Option::as_ref);
    let (Some(v), Some(iat), Some(exp), Some(s)) = (v, iat, exp, s) else {
        return Err(reject(RejectReason::Malformed));
    };
    // Stricter than Python: only the integer 1 is version 1 (not `true`, not `1.0`).
    let Scalar::Str(state) = s else {
        return Err(reject(RejectReason::Malformed));
    };
    if *v != Scalar::Int("1") {
        return Err(reject(RejectReason::Malformed));
    }
    // Accept-conditions are stated positively so NaN fails them; infinities are
    // refused too (Python accepts them, but never mints them).
    match number(Some(iat)) {
        Some(iat) if iat.is_finite() && iat <= now + FUTURE_SKEW_SECS => {}
        _ => return Err(reject(RejectReason::MintedInFuture)),
    }
    match number(Some(exp)) {
        Some(exp) if exp.is_finite() && now < exp => {}
        _ => return Err(reject(RejectReason::Expired)),
    }
    if !str_eq(m, identity.method().as_bytes())
        || !str_eq(t, identity.target().as_bytes())
        || !str_eq(a, identity.args_digest().as_bytes())
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
    Ok(Text::from_wtf8_unchecked(state.clone().into_owned()))
}
