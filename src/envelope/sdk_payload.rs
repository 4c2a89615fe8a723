//! The claims of a payload an SDK wrote itself, for the bindings that seal
//! and open such payloads (the Python SDK builds its claims and hands our
//! codec the bytes): read exactly as Python's `json.loads` reads them.

use crate::clock::UnixTime;
use crate::error::Error;
use crate::json::{Duplicates, Value};
use crate::reason::RejectReason;

/// A claims payload, parsed as Python's `json.loads` parses it: strings are
/// WTF-8 (the SDK's `compact_json` escapes lone surrogates as `\udXXX` on
/// purpose, and they are kept, not refused), the last duplicate key wins.
/// So whatever the SDK's own boundary can read, this reads too.
///
/// ```
/// use stateseal::SdkPayload;
///
/// let claims = SdkPayload::parse(br#"{"v":1,"iat":10.5,"exp":70,"m":"tools/call","t":"transfer","s":"\ud800"}"#)?;
/// assert_eq!(claims.issued_at().map(|t| t.as_secs_f64()), Some(10.5));
/// assert_eq!(claims.round(), Some(("tools/call", "transfer")));
/// assert!(!claims.has("u"));
/// # Ok::<(), stateseal::Error>(())
/// ```
#[derive(Debug)]
pub struct SdkPayload {
    claims: Value,
}

impl SdkPayload {
    /// Parses `payload`.
    ///
    /// # Errors
    /// [`RejectReason::Malformed`] unless it is one JSON object.
    pub fn parse(payload: &[u8]) -> Result<Self, Error> {
        let malformed = Error::Rejected(RejectReason::Malformed);
        let claims = crate::json::parse(payload, Duplicates::LastWins).map_err(|_| malformed)?;
        match claims {
            Value::Object(_) => Ok(Self { claims }),
            _ => Err(Error::Rejected(RejectReason::Malformed)),
        }
    }

    /// The `iat` claim, when it is a finite number.
    pub fn issued_at(&self) -> Option<UnixTime> {
        self.number("iat").and_then(UnixTime::from_secs_f64)
    }

    /// The claim `name`, when it is a number (as Python reads it: a double).
    pub(crate) fn number(&self, name: &str) -> Option<f64> {
        match self.get(name)? {
            Value::Float(f) => Some(*f),
            Value::Int(i) => i.parse().ok(),
            _ => None,
        }
    }

    /// The claim `name`, as parsed.
    pub(crate) fn get(&self, name: &str) -> Option<&Value> {
        self.claims.get(name)
    }

    /// The round the `m` and `t` claims name, when both are strings of
    /// Unicode text (a target holding a lone surrogate names no round a
    /// configuration can, so it is `None` too).
    pub fn round(&self) -> Option<(&str, &str)> {
        let text = |name| match self.get(name)? {
            Value::Str(t) => t.as_str(),
            _ => None,
        };
        Some((text("m")?, text("t")?))
    }

    /// Whether the claim `name` is present (with any value, `null` included).
    pub fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_the_sdk_writes_lone_surrogates_included() {
        let claims = SdkPayload::parse(
            br#"{"v":1,"iat":1,"exp":2,"m":"tools/call","t":"transfer","a":"x","s":"{\"env\":\"\ud800\"}","p":"[\"c\",null,\"\udfff\"]"}"#,
        )
        .expect("the SDK's own output");
        assert_eq!(claims.issued_at(), Some(UnixTime::from_secs(1)));
        assert_eq!(claims.round(), Some(("tools/call", "transfer")));
        // A target the configuration cannot name.
        let odd = SdkPayload::parse(br#"{"m":"tools/call","t":"\ud800","iat":"x"}"#).unwrap();
        assert_eq!(odd.round(), None);
        assert_eq!(odd.issued_at(), None);
        let endless = SdkPayload::parse(br#"{"iat":1e400}"#).unwrap();
        assert_eq!(endless.issued_at(), None, "not finite");
        // Python's json.loads: the last duplicate wins.
        let dup = SdkPayload::parse(br#"{"t":"a","m":"tools/call","t":"b","u":null}"#).unwrap();
        assert_eq!(dup.round(), Some(("tools/call", "b")));
        assert!(dup.has("u"));
        for bad in [&b"[1]"[..], b"not json", b"{\"m\":", b""] {
            assert_eq!(
                SdkPayload::parse(bad).unwrap_err(),
                Error::Rejected(RejectReason::Malformed)
            );
        }
    }
}
