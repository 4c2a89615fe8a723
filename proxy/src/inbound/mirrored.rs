//! The headers a client mirrors from its request body (MCP 2026-07-28,
//! SEP-2243): `Mcp-Method` carries the body's `method` and `Mcp-Name` the
//! `params.name` (`tools/call`, `prompts/get`) or `params.uri`
//! (`resources/read`), so that gateways can route, rate-limit and authorize
//! without reading bodies.
//!
//! A gateway in front of the proxy decides on the headers; the upstream acts
//! on the body. When the two disagree, a caller allowed `Mcp-Name: lookup`
//! runs `delete` (a confused deputy). A 2026-07-28 server refuses such a
//! request itself, but the servers the proxy is for are often older and read
//! only the body. So the proxy, which reads the body anyway, refuses it
//! before anything else happens (before a single-use state is spent): HTTP
//! 400 with `-32020` (`HeaderMismatch`), as the specification and its
//! conformance suite have it.
//!
//! The rules: header names in any case; values compared byte for byte
//! (case-sensitive) after the whitespace HTTP allows around a field value;
//! `Mcp-Name` may be Base64 between `=?base64?` and `?=` (how a client sends a
//! name HTTP cannot carry), which must then decode strictly; a header present
//! must agree whatever the protocol version; a missing one is refused only
//! where the request's `MCP-Protocol-Version` postdates the headers (a
//! 2025-era client never sends them), and `Mcp-Method` only on requests (the
//! specification leaves notifications open). A header cannot mirror a batch,
//! so a batch that comes with one is refused. `Mcp-Param-*` headers mirror
//! arguments named in a tool's schema, which the proxy does not read; it
//! never changes arguments either, so the upstream checks those against the
//! very arguments the client sent.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http::HeaderMap;
use serde_json::Value;

/// The JSON-RPC code of a request whose headers do not mirror its body.
pub(crate) const HEADER_MISMATCH: i32 = -32020;

/// The protocol versions from before the headers: a client speaking one may
/// leave them out (the transport reads a missing version as `2025-03-26`).
const BEFORE_HEADERS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// What a client sent in one mirrored header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
enum Header {
    /// Not sent.
    #[default]
    Absent,
    /// Sent once: its value, without surrounding whitespace, Base64 decoded.
    Sent(Vec<u8>),
    /// Sent twice, or Base64 that does not decode: agrees with no body.
    Unreadable,
}

/// The mirrored headers of one request.
#[derive(Debug, Clone, Default)]
pub(crate) struct Mirrored {
    method: Header,
    name: Header,
    /// Whether the request's protocol version requires the headers.
    required: bool,
}

impl Mirrored {
    /// Reads the mirrored headers (and the protocol version) of a request.
    pub(crate) fn of(headers: &HeaderMap) -> Self {
        let version = one(headers, "mcp-protocol-version");
        let required = match &version {
            Header::Absent => false,
            Header::Sent(v) => !BEFORE_HEADERS.iter().any(|b| b.as_bytes() == v.as_slice()),
            Header::Unreadable => true,
        };
        let name = match one(headers, "mcp-name") {
            Header::Sent(v) => decoded(v),
            other => other,
        };
        Self {
            method: one(headers, "mcp-method"),
            name,
            required,
        }
    }

    /// Whether the headers mirror `messages` (the body's, one unless
    /// `batch`): `Err` says what is wrong, naming only the header.
    pub(crate) fn check(&self, messages: &[&mut Value], batch: bool) -> Result<(), &'static str> {
        if batch || messages.len() != 1 {
            return match (&self.method, &self.name) {
                (Header::Absent, Header::Absent) => Ok(()),
                _ => Err("Mcp-Method and Mcp-Name cannot mirror a batch"),
            };
        }
        let message: &Value = messages[0];
        let method = message.get("method").and_then(Value::as_str);
        let request = method.is_some() && message.get("id").is_some();
        agrees(&self.method, method, self.required && request, &METHOD)?;
        let field = match method {
            Some("tools/call" | "prompts/get") => "name",
            Some("resources/read") => "uri",
            // Other methods carry no name the header mirrors.
            _ => return Ok(()),
        };
        let target = message
            .get("params")
            .and_then(|p| p.get(field))
            .and_then(Value::as_str);
        agrees(
            &self.name,
            target,
            self.required && request && target.is_some(),
            &NAME,
        )
    }
}

/// What a header that fails says: missing, and not matching.
struct Named {
    missing: &'static str,
    mismatch: &'static str,
}

const METHOD: Named = Named {
    missing: "the Mcp-Method header is missing",
    mismatch: "the Mcp-Method header does not match the body",
};

const NAME: Named = Named {
    missing: "the Mcp-Name header is missing",
    mismatch: "the Mcp-Name header does not match the body",
};

/// Whether `header` mirrors `body`; a missing header fails only when `required`.
fn agrees(
    header: &Header,
    body: Option<&str>,
    required: bool,
    named: &Named,
) -> Result<(), &'static str> {
    match header {
        Header::Absent if required => Err(named.missing),
        Header::Absent => Ok(()),
        Header::Sent(v) if body.map(str::as_bytes) == Some(v.as_slice()) => Ok(()),
        Header::Sent(_) | Header::Unreadable => Err(named.mismatch),
    }
}

/// The one value of header `name`, without the spaces and tabs HTTP allows
/// around it.
fn one(headers: &HeaderMap, name: &str) -> Header {
    let mut values = headers.get_all(name).iter();
    match (values.next(), values.next()) {
        (None, _) => Header::Absent,
        (Some(v), None) => Header::Sent(without_ows(v.as_bytes()).to_vec()),
        (Some(_), Some(_)) => Header::Unreadable,
    }
}

/// A value between `=?base64?` and `?=` decoded (strict, padded Base64);
/// anything else as it came.
fn decoded(value: Vec<u8>) -> Header {
    let Some(inner) = value
        .strip_prefix(b"=?base64?")
        .and_then(|rest| rest.strip_suffix(b"?="))
    else {
        return Header::Sent(value);
    };
    match STANDARD.decode(inner) {
        Ok(bytes) => Header::Sent(bytes),
        Err(_) => Header::Unreadable,
    }
}

/// `bytes` without the spaces and tabs around them (HTTP's optional whitespace).
fn without_ows(bytes: &[u8]) -> &[u8] {
    let ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = bytes.iter().position(|b| !ows(b)).unwrap_or(bytes.len());
    let end = bytes.iter().rposition(|b| !ows(b)).map_or(start, |e| e + 1);
    &bytes[start..end]
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;
    use serde_json::json;

    use super::*;

    const MODERN: &str = "2026-07-28";

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            let name = http::HeaderName::from_bytes(name.as_bytes()).expect("name");
            h.append(name, HeaderValue::from_str(value).expect("value"));
        }
        h
    }

    fn check(pairs: &[(&str, &str)], body: Value) -> Result<(), &'static str> {
        let mut body = body;
        match &mut body {
            Value::Array(items) => {
                let messages: Vec<&mut Value> = items.iter_mut().collect();
                Mirrored::of(&headers(pairs)).check(&messages, true)
            }
            one => Mirrored::of(&headers(pairs)).check(&[one], false),
        }
    }

    fn call(name: &str) -> Value {
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
               "params": {"name": name, "arguments": {}}})
    }

    fn list() -> Value {
        json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list"})
    }

    #[test]
    fn headers_that_mirror_the_body_pass() {
        let v = ("MCP-Protocol-Version", MODERN);
        assert_eq!(check(&[v, ("Mcp-Method", "tools/list")], list()), Ok(()));
        assert_eq!(check(&[v, ("mcp-method", "tools/list")], list()), Ok(()));
        assert_eq!(check(&[v, ("MCP-METHOD", "tools/list")], list()), Ok(()));
        let named = [v, ("Mcp-Method", "tools/call"), ("Mcp-Name", "deploy")];
        assert_eq!(check(&named, call("deploy")), Ok(()));
        // The whitespace HTTP allows around a value is not part of it.
        let spaced = [
            v,
            ("Mcp-Method", " tools/call\t"),
            ("Mcp-Name", "  deploy  "),
        ];
        assert_eq!(check(&spaced, call("deploy")), Ok(()));
        let read = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read",
                          "params": {"uri": "file:///a b"}});
        let uri = [
            v,
            ("Mcp-Method", "resources/read"),
            ("Mcp-Name", "file:///a b"),
        ];
        assert_eq!(check(&uri, read), Ok(()));
        // A name HTTP cannot carry comes as Base64.
        let encoded = format!("=?base64?{}?=", STANDARD.encode("tööl"));
        let b64 = [
            v,
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", encoded.as_str()),
        ];
        assert_eq!(check(&b64, call("tööl")), Ok(()));
        // Without both markers a value is literal, even when it looks encoded.
        let half = [
            v,
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "=?base64?SGVsbG8="),
        ];
        assert_eq!(check(&half, call("=?base64?SGVsbG8=")), Ok(()));
    }

    #[test]
    fn a_header_that_disagrees_with_the_body_is_refused_without_echoing_either() {
        let v = ("MCP-Protocol-Version", MODERN);
        let method = Err("the Mcp-Method header does not match the body");
        let name = Err("the Mcp-Name header does not match the body");
        assert_eq!(check(&[v, ("Mcp-Method", "prompts/list")], list()), method);
        // Values are case-sensitive.
        assert_eq!(check(&[v, ("Mcp-Method", "TOOLS/LIST")], list()), method);
        // A header sent twice agrees with nothing.
        let twice = [
            v,
            ("Mcp-Method", "tools/list"),
            ("Mcp-Method", "tools/list"),
        ];
        assert_eq!(check(&twice, list()), method);
        let wrong = [v, ("Mcp-Method", "tools/call"), ("Mcp-Name", "lookup")];
        assert_eq!(check(&wrong, call("delete")), name);
        assert_eq!(check(&wrong, call("Lookup")), name);
        // Base64 must decode strictly: padding, alphabet.
        for bad in ["=?base64?SGVsbG8?=", "=?base64?SGVs!!!bG8=?="] {
            let h = [v, ("Mcp-Method", "tools/call"), ("Mcp-Name", bad)];
            assert_eq!(check(&h, call("Hello")), name, "{bad}");
        }
        // Decoded, the name must be the body's; literal, likewise.
        let hello = format!("=?base64?{}?=", STANDARD.encode("Hello"));
        let h = [
            v,
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", hello.as_str()),
        ];
        assert_eq!(check(&h, call(&hello)), name);
        let half = [
            v,
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "=?base64?SGVsbG8="),
        ];
        assert_eq!(check(&half, call("Hello")), name);
        // Nothing a client sent is in what the proxy says.
        for said in [method, name] {
            let said = said.unwrap_err();
            assert!(
                !said.contains("lookup") && !said.contains("delete"),
                "{said}"
            );
        }
    }

    #[test]
    fn a_missing_header_is_refused_only_where_the_protocol_version_requires_it() {
        let modern = ("MCP-Protocol-Version", MODERN);
        assert_eq!(
            check(&[modern], list()),
            Err("the Mcp-Method header is missing")
        );
        assert_eq!(
            check(&[modern, ("Mcp-Method", "tools/call")], call("deploy")),
            Err("the Mcp-Name header is missing")
        );
        // A version after 2026-07-28 requires them too.
        assert!(check(&[("MCP-Protocol-Version", "2027-01-01")], list()).is_err());
        // Notifications may go without (the specification leaves them open).
        let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled"});
        assert_eq!(check(&[modern], note.clone()), Ok(()));
        // ...but a header one sends must agree.
        assert!(check(&[modern, ("Mcp-Method", "tools/list")], note).is_err());
        // A name-bearing request without a name has nothing to mirror.
        let nameless = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}});
        assert_eq!(
            check(&[modern, ("Mcp-Method", "tools/call")], nameless),
            Ok(())
        );
        // A 2025-era client never sends them, and no version means 2025-03-26...
        for old in ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"] {
            let v = ("MCP-Protocol-Version", old);
            assert_eq!(check(&[v], call("deploy")), Ok(()), "{old}");
        }
        assert_eq!(check(&[], call("deploy")), Ok(()));
        // ...but one it does send must agree, whatever the version.
        let sent = [("Mcp-Method", "tools/call"), ("Mcp-Name", "lookup")];
        assert!(check(&sent, call("delete")).is_err());
        let old = [
            ("MCP-Protocol-Version", "2025-11-25"),
            ("Mcp-Method", "tools/list"),
        ];
        assert!(check(&old, call("delete")).is_err());
    }

    #[test]
    fn a_batch_cannot_be_mirrored() {
        let batch = json!([call("deploy"), list()]);
        assert_eq!(check(&[], batch.clone()), Ok(()));
        assert_eq!(
            check(&[("Mcp-Method", "tools/call")], batch.clone()),
            Err("Mcp-Method and Mcp-Name cannot mirror a batch")
        );
        assert!(check(&[("Mcp-Name", "deploy")], batch).is_err());
        // A batch of one is still a batch.
        assert!(check(&[("Mcp-Method", "tools/call")], json!([call("deploy")])).is_err());
    }
}
