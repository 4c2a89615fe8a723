//! The requests of one JSON-RPC body, for servers that see the HTTP body but
//! not the parsed request when they mint or verify (the TypeScript SDK's
//! `RequestStateCodec` hook, through the Node package).

use crate::error::Error;
use crate::json::{Duplicates, Value, parse};
use crate::reason::RejectReason;

use super::identity::RequestIdentity;

/// The requests of one JSON-RPC body (a message or a batch), parsed once
/// with the Python SDK's `json.loads` semantics, as [`RequestIdentity::from_json`]
/// reads params: each round's identity by its id and method.
///
/// Ids are compared as JavaScript reads them (the TypeScript SDK hands the
/// codec `JSON.parse`'s value): numbers by their `f64` value, so `1`, `1.0`
/// and `1E0` are one id, as are integers past 2^53 that round to the same
/// double; strings by their exact text; any other id matches nothing. A
/// body that repeats an id (so compared) binds none of its requests with
/// that id: a state minted for one request's arguments must never verify
/// for another's.
///
/// ```
/// use stateseal::{RequestBatch, RequestIdentity};
///
/// let body = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"deploy","arguments":{"env":"prod"}}}"#;
/// let batch = RequestBatch::parse(body);
/// let id = batch.identity("tools/call", b"7")?;
/// let params = br#"{"name":"deploy","arguments":{"env":"prod"}}"#;
/// assert_eq!(id, RequestIdentity::from_json("tools/call", params)?);
/// assert!(batch.identity("tools/call", b"8").is_err());
/// # Ok::<(), stateseal::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct RequestBatch {
    /// (id, method, params) of every request; `None` when the body is not JSON.
    requests: Option<Vec<(Value, String, Value)>>,
}

/// `message` as (id, method, params), if it is a request (not a notification
/// or a response): its members moved out, not copied (a parse is made per
/// request, and params can be large). Keys are unique after the parse.
fn request_of(message: Value) -> Option<(Value, String, Value)> {
    let Value::Object(members) = message else {
        return None;
    };
    let (mut id, mut method, mut params) = (None, None, None);
    for (key, value) in members {
        match key.as_bytes() {
            b"id" => id = Some(value),
            b"method" => method = Some(value),
            b"params" => params = Some(value),
            _ => {}
        }
    }
    let method = match method? {
        Value::Str(m) => m.into_string().ok()?,
        _ => return None,
    };
    Some((id?, method, params.unwrap_or(Value::Null)))
}

/// A request id as JavaScript's `===` sees it after `JSON.parse`.
#[derive(PartialEq)]
enum JsId<'a> {
    Number(f64),
    String(&'a [u8]),
}

impl<'a> JsId<'a> {
    /// `None` for an id that is neither a number nor a string (no JSON-RPC request has one).
    fn of(id: &'a Value) -> Option<Self> {
        match id {
            // Correctly rounded, as `JSON.parse` rounds; past the f64 range, infinity as there.
            Value::Int(digits) => digits.parse().ok().map(Self::Number),
            Value::Float(f) => Some(Self::Number(*f)),
            Value::Str(t) => Some(Self::String(t.as_bytes())),
            _ => None,
        }
    }
}

impl RequestBatch {
    /// Parses an HTTP body; a body that is not JSON gives a batch every lookup refuses.
    pub fn parse(body: &[u8]) -> Self {
        let requests = parse(body, Duplicates::LastWins).ok().map(|v| match v {
            Value::Array(batch) => batch.into_iter().filter_map(request_of).collect(),
            one => request_of(one).into_iter().collect(),
        });
        Self { requests }
    }

    /// The identity of the request with this `method` and id (`id_json`, its JSON text).
    ///
    /// # Errors
    /// [`Error::Rejected`] ([`RejectReason::Malformed`]) when the body is not
    /// JSON, the id is neither a number nor a string, no request or more than
    /// one has that id (compared as JavaScript compares them), its method
    /// differs, or its params cannot be bound.
    pub fn identity(&self, method: &str, id_json: &[u8]) -> Result<RequestIdentity, Error> {
        let id = parse(id_json, Duplicates::Reject).map_err(|_| malformed())?;
        self.identity_by(method, JsId::of(&id).ok_or_else(malformed)?)
    }

    /// The identity of the request with this `method` and a number id, as
    /// JavaScript holds it: what [`RequestBatch::identity`] finds for the id's
    /// JSON text, without writing and reading that text (a number id is the
    /// common case, looked up once per round).
    ///
    /// ```
    /// use stateseal::RequestBatch;
    ///
    /// let batch = RequestBatch::parse(br#"{"jsonrpc":"2.0","id":7.0,"method":"tools/call","params":{}}"#);
    /// assert_eq!(batch.identity_by_number("tools/call", 7.0)?, batch.identity("tools/call", b"7")?);
    /// assert!(batch.identity_by_number("tools/call", f64::NAN).is_err());
    /// # Ok::<(), stateseal::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`RequestBatch::identity`].
    pub fn identity_by_number(&self, method: &str, id: f64) -> Result<RequestIdentity, Error> {
        self.identity_by(method, JsId::Number(id))
    }

    fn identity_by(&self, method: &str, id: JsId<'_>) -> Result<RequestIdentity, Error> {
        let requests = self.requests.as_ref().ok_or_else(malformed)?;
        let mut with_id = requests
            .iter()
            .filter(|(i, _, _)| JsId::of(i).is_some_and(|i| i == id));
        let (Some((_, m, params)), None) = (with_id.next(), with_id.next()) else {
            return Err(malformed());
        };
        if m != method {
            return Err(malformed());
        }
        RequestIdentity::from_params(method, params).map_err(|_| malformed())
    }
}

fn malformed() -> Error {
    Error::Rejected(RejectReason::Malformed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str, env: &str) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"deploy","arguments":{{"env":"{env}","n":1.0}}}}}}"#
        )
    }

    fn params(env: &str) -> String {
        format!(r#"{{"name":"deploy","arguments":{{"env":"{env}","n":1.0}}}}"#)
    }

    #[test]
    fn each_request_of_a_batch_by_its_id() {
        let body = format!("[{},{}]", call("1", "prod"), call("\"b\"", "staging"));
        let batch = RequestBatch::parse(body.as_bytes());
        let prod = RequestIdentity::from_json("tools/call", params("prod").as_bytes());
        let staging = RequestIdentity::from_json("tools/call", params("staging").as_bytes());
        assert_eq!(batch.identity("tools/call", b"1"), prod);
        assert_eq!(batch.identity("tools/call", br#""b""#), staging);
        // Python's number semantics, as the servers bind: 1.0 is not 1.
        let int =
            RequestIdentity::from_json("tools/call", params("prod").replace("1.0", "1").as_bytes());
        assert_ne!(batch.identity("tools/call", b"1"), int);
    }

    /// What the Node package asks: the id as `JSON.stringify` writes the SDK's `req.id`.
    const JS_ONE: &[u8] = b"1";
    const JS_TWO_POW_53: &[u8] = b"9007199254740992";

    #[test]
    fn ids_javascript_reads_as_one_bind_none_of_their_requests() {
        let malformed = Err(Error::Rejected(RejectReason::Malformed));
        // JavaScript reads each pair as one id: the SDK hands both rounds the same `req.id`,
        // so a state minted for staging must not verify for the round that deploys prod.
        for (staging, prod, js) in [
            ("1", "1.0", JS_ONE),
            ("1.0", "1", JS_ONE),
            ("1", "1E0", JS_ONE),
            ("1e0", "10e-1", JS_ONE),
            ("9007199254740992", "9007199254740993", JS_TWO_POW_53),
            ("9007199254740993", "9007199254740992.0", JS_TWO_POW_53),
        ] {
            let body = format!("[{},{}]", call(staging, "staging"), call(prod, "prod"));
            let batch = RequestBatch::parse(body.as_bytes());
            for lookup in [js, staging.as_bytes(), prod.as_bytes()] {
                assert_eq!(
                    batch.identity("tools/call", lookup),
                    malformed,
                    "ids {staging} and {prod}, looked up as {}",
                    String::from_utf8_lossy(lookup)
                );
            }
        }
    }

    #[test]
    fn a_lone_request_is_found_by_the_id_javascript_reads() {
        let prod = RequestIdentity::from_json("tools/call", params("prod").as_bytes());
        for (id, js) in [
            ("1.0", JS_ONE),
            ("1E0", JS_ONE),
            ("9007199254740993", JS_TWO_POW_53),
        ] {
            let one = RequestBatch::parse(call(id, "prod").as_bytes());
            assert_eq!(one.identity("tools/call", js), prod, "id {id}");
        }
        // -0 is 0 to `===`; a string is never a number; ids of other types bind nothing.
        let zero = RequestBatch::parse(call("-0.0", "prod").as_bytes());
        assert_eq!(zero.identity("tools/call", b"0"), prod);
        let text = format!("[{},{}]", call(r#""1""#, "prod"), call("2", "staging"));
        let text = RequestBatch::parse(text.as_bytes());
        assert_eq!(text.identity("tools/call", br#""1""#), prod);
        assert!(text.identity("tools/call", b"1").is_err());
        assert!(text.identity("tools/call", br#""1.0""#).is_err());
        for odd in ["true", "[1]", r#"{"a":1}"#] {
            let batch = RequestBatch::parse(call(odd, "prod").as_bytes());
            assert!(
                batch.identity("tools/call", odd.as_bytes()).is_err(),
                "id {odd}"
            );
        }
    }

    #[test]
    fn a_number_id_finds_what_its_json_text_finds() {
        let malformed = Err(Error::Rejected(RejectReason::Malformed));
        let body = format!(
            "[{},{},{},{}]",
            call("1.0", "prod"),
            call("-0", "zero"),
            call("9007199254740993", "big"),
            call(r#""3""#, "text")
        );
        let batch = RequestBatch::parse(body.as_bytes());
        for (number, json) in [
            (1.0, &b"1"[..]),
            (0.0, b"0"),
            (-0.0, b"0"),
            (9_007_199_254_740_992.0, JS_TWO_POW_53),
        ] {
            assert_eq!(
                batch.identity_by_number("tools/call", number),
                batch.identity("tools/call", json),
                "id {number}"
            );
            assert!(batch.identity_by_number("tools/call", number).is_ok());
        }
        // A string id is never a number; NaN and unknown numbers match nothing.
        for number in [3.0, f64::NAN, 2.0, f64::INFINITY] {
            assert_eq!(batch.identity_by_number("tools/call", number), malformed);
        }
        assert_eq!(batch.identity_by_number("prompts/get", 1.0), malformed);
        // Ids JavaScript reads as one bind none of their requests, by number too.
        let twice = format!("[{},{}]", call("1", "staging"), call("1E0", "prod"));
        let twice = RequestBatch::parse(twice.as_bytes());
        assert_eq!(twice.identity_by_number("tools/call", 1.0), malformed);
        assert_eq!(
            RequestBatch::parse(b"{").identity_by_number("tools/call", 1.0),
            malformed
        );
    }

    #[test]
    fn ambiguous_or_missing_rounds_are_refused() {
        let malformed = Err(Error::Rejected(RejectReason::Malformed));
        // The same id twice: neither request binds (else a state minted for one verifies for the other).
        let twice = format!("[{},{}]", call("1", "staging"), call("1", "prod"));
        assert_eq!(
            RequestBatch::parse(twice.as_bytes()).identity("tools/call", b"1"),
            malformed
        );
        let one = RequestBatch::parse(call("1", "prod").as_bytes());
        assert_eq!(one.identity("tools/call", b"2"), malformed);
        assert_eq!(one.identity("prompts/get", b"1"), malformed);
        assert_eq!(one.identity("tools/call", b"not json"), malformed);
        assert_eq!(
            RequestBatch::parse(b"{").identity("tools/call", b"1"),
            malformed
        );
        assert_eq!(
            RequestBatch::parse(b"").identity("tools/call", b"1"),
            malformed
        );
        // A notification has no id; a request without params binds as `{}`.
        let notification = br#"{"jsonrpc":"2.0","method":"tools/call"}"#;
        assert_eq!(
            RequestBatch::parse(notification).identity("tools/call", b"null"),
            malformed
        );
        let bare = RequestBatch::parse(br#"{"jsonrpc":"2.0","id":3,"method":"tools/call"}"#);
        assert_eq!(
            bare.identity("tools/call", b"3"),
            RequestIdentity::from_json("tools/call", b"{}")
        );
    }
}
