//! Writing and checking the claims payload.

use crate::error::Error;
use crate::json::{Duplicates, Text, Value, parse, push_json_float, push_text};
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
pub(crate) fn write_payload(c: &MintClaims<'_>) -> String {
    let mut out = String::with_capacity(96 + c.state.len() + c.identity.target().len());
    out.push_str("{\"v\":1,\"iat\":");
    push_json_float(c.iat, &mut out);
    out.push_str(",\"exp\":");
    push_json_float(c.exp, &mut out);
    out.push_str(",\"m\":");
    push_text(&Text::from(c.identity.method()), &mut out);
    out.push_str(",\"t\":");
    push_text(c.identity.target(), &mut out);
    out.push_str(",\"a\":\"");
    out.push_str(c.identity.args_digest());
    out.push_str("\",\"s\":");
    crate::json::push_wtf8(c.state, &mut out);
    if let Some(aud) = c.audience {
        out.push_str(",\"aud\":");
        push_text(&Text::from(aud), &mut out);
    }
    if let Some(p) = c.principal_claim {
        out.push_str(",\"p\":\"");
        out.push_str(p);
        out.push('"');
    }
    out.push('}');
    out
}

fn reject(r: RejectReason) -> Error {
    Error::Rejected(r)
}

/// A JSON number as `f64` (integers of any size included); booleans are not numbers.
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Int(s) => s.parse().ok(),
        Value::Float(f) => Some(*f),
        _ => None,
    }
}

/// `None` for an absent member or JSON null, as Python's `claims.get(k)` compared with `None`.
fn present<'v>(claims: &'v Value, key: &str) -> Option<&'v Value> {
    claims.get(key).filter(|v| !matches!(v, Value::Null))
}

fn str_eq(v: Option<&Value>, expected: &[u8]) -> bool {
    matches!(v, Some(Value::Str(t)) if t.as_bytes() == expected)
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
    let claims = parse(payload, Duplicates::Reject).map_err(|_| reject(RejectReason::Malformed))?;
    let (Some(v), Some(iat), Some(exp), Some(s)) =
        (claims.get("v"), claims.get("iat"), claims.get("exp"), claims.get("s"))
    else {
        return Err(reject(RejectReason::Malformed));
    };
    // Stricter than Python: only the integer 1 is version 1 (not `true`, not `1.0`).
    let Value::Str(state) = s else { return Err(reject(RejectReason::Malformed)) };
    if !matches!(v, Value::Int(n) if n == "1") {
        return Err(reject(RejectReason::Malformed));
    }
    // Accept-conditions are stated positively so NaN fails them; infinities are
    // refused too (Python accepts them, but never mints them).
    match number(iat) {
        Some(iat) if iat.is_finite() && iat <= now + FUTURE_SKEW_SECS => {}
        _ => return Err(reject(RejectReason::MintedInFuture)),
    }
    match number(exp) {
        Some(exp) if exp.is_finite() && now < exp => {}
        _ => return Err(reject(RejectReason::Expired)),
    }
    if !str_eq(claims.get("m"), identity.method().as_bytes())
        || !str_eq(claims.get("t"), identity.target().as_bytes())
        || !str_eq(claims.get("a"), identity.args_digest().as_bytes())
    {
        return Err(reject(RejectReason::RequestBinding));
    }
    let aud_ok = match (present(&claims, "aud"), audience) {
        (None, None) => true,
        (Some(claim), Some(expected)) => str_eq(Some(claim), expected.as_bytes()),
        _ => false,
    };
    if !aud_ok {
        return Err(reject(RejectReason::Audience));
    }
    match (present(&claims, "p"), principal) {
        (None, None) => {}
        (Some(Value::Str(claim)), Some(p)) => {
            let ok = claim.as_str().is_some_and(|c| principal::matches(c, p));
            if !ok {
                return Err(reject(RejectReason::Principal));
            }
        }
        (Some(_), Some(_)) => return Err(reject(RejectReason::Principal)),
        _ => return Err(reject(RejectReason::PrincipalDrift)),
    }
    Ok(state.clone())
}
