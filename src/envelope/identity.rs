//! The request a state is bound to: method, target and an arguments digest.

use std::borrow::Cow;
use std::cell::RefCell;

use aws_lc_rs::digest::{SHA256, digest};

use crate::codec::b64u_encode_16;
use crate::error::{DataError, Error};
use crate::json::{Duplicates, PyJson, Text, Value, parse};

/// The three methods whose results may carry `requestState`.
pub const CARRIER_METHODS: [&str; 3] = ["tools/call", "prompts/get", "resources/read"];

/// What one round's state binds to: `(method, target, args digest)`.
///
/// The target is the tool or prompt `name`, or the resource `uri` for
/// `resources/read`; the digest is
/// `b64url(SHA-256(json.dumps(arguments, sort_keys=True, separators=(",",":")))[..16])`
/// with Python's semantics (`arguments` that is falsy counts as `{}`;
/// `resources/read` binds no arguments). It is an allowlist: a new wire field
/// cannot silently join or leave the binding.
///
/// ```
/// use stateseal::RequestIdentity;
/// let id = RequestIdentity::from_json("tools/call", br#"{"name":"deploy","arguments":{"env":"prod"}}"#)?;
/// assert_eq!(id.args_digest(), "_fZbwPys4tn6ogEHRin4tQ");
/// # Ok::<(), stateseal::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct RequestIdentity {
    method: Cow<'static, str>,
    target: Text,
    /// 22 base64url characters, kept inline: an identity is built per request.
    args_digest: [u8; 22],
}

impl RequestIdentity {
    /// The identity of a request whose params are given as parsed JSON.
    ///
    /// # Errors
    /// [`DataError::UnsupportedParams`] when params is not an object or null, or
    /// names its target with an array or object.
    pub fn from_params(method: &str, params: &Value) -> Result<Self, Error> {
        Self::of(method, params)
    }

    /// Python's `_request_identity`: `p = params or {}`; the target is
    /// `str(p.get("uri" | "name", ""))`; the arguments are `p.get("arguments") or {}`.
    fn of<J: PyJson>(method: &str, params: &J) -> Result<Self, Error> {
        let is_object = params
            .object_or_null()
            .ok_or(Error::Data(DataError::UnsupportedParams))?;
        let member = |key| if is_object { params.member(key) } else { None };
        let target_key = if method == "resources/read" {
            "uri"
        } else {
            "name"
        };
        let target = match member(target_key) {
            None => Text::default(),
            Some(v) => v
                .py_str()
                .ok_or(Error::Data(DataError::UnsupportedParams))?,
        };
        let args_digest = digest_of(|canonical| {
            match member("arguments").filter(|a| method != "resources/read" && a.truthy()) {
                Some(args) => args.write_sorted(canonical),
                None => canonical.extend_from_slice(b"{}"),
            }
        });
        Ok(Self {
            method: Self::method_name(method),
            target,
            args_digest,
        })
    }

    /// Parses `params_json` with Python's `json.loads` semantics, then [`Self::from_params`].
    ///
    /// # Errors
    /// [`DataError::InvalidJson`] or [`DataError::UnsupportedParams`].
    pub fn from_json(method: &str, params_json: &[u8]) -> Result<Self, Error> {
        Self::from_params(method, &parse(params_json, Duplicates::LastWins)?)
    }

    /// The identity of a request whose params came through `serde_json` (e.g. rmcp).
    ///
    /// # Errors
    /// As [`Self::from_params`].
    pub fn from_serde(method: &str, params: &serde_json::Value) -> Result<Self, Error> {
        Self::of(method, params)
    }

    /// The identity of a request given by parts, as rmcp hands them to a handler:
    /// the tool or prompt `name` (or the resource `uri`) and its `arguments`.
    pub fn for_call(
        method: &str,
        target: &str,
        arguments: Option<&serde_json::Map<String, serde_json::Value>>,
    ) -> Self {
        let args_digest = digest_of(|canonical| {
            match arguments.filter(|a| method != "resources/read" && !a.is_empty()) {
                Some(args) => crate::json::write_sorted_map(args, canonical),
                None => canonical.extend_from_slice(b"{}"),
            }
        });
        Self {
            method: Self::method_name(method),
            target: Text::from(target),
            args_digest,
        }
    }

    fn method_name(method: &str) -> Cow<'static, str> {
        // The carriers are the common case: name them without allocating.
        CARRIER_METHODS
            .iter()
            .find(|m| **m == method)
            .map_or_else(|| Cow::Owned(method.to_owned()), |m| Cow::Borrowed(*m))
    }

    /// The method (`tools/call`, `prompts/get` or `resources/read`).
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The bound target (tool/prompt name or resource uri).
    pub fn target(&self) -> &Text {
        &self.target
    }

    /// [`Self::args_digest`] as the bytes they are, without a UTF-8 check per use.
    pub(crate) fn args_digest_bytes(&self) -> &[u8; 22] {
        &self.args_digest
    }

    /// The bound arguments digest (22 base64url characters).
    pub fn args_digest(&self) -> &str {
        // Base64url characters are ASCII, so this never falls back.
        std::str::from_utf8(&self.args_digest).unwrap_or_default()
    }
}

impl std::fmt::Debug for RequestIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Targets and digests are not secret, but arguments may be: print the method only.
        f.debug_struct("RequestIdentity")
            .field("method", &self.method)
            .finish_non_exhaustive()
    }
}

/// Canonical argument bytes above this size are not kept for the next request.
const KEEP_BUFFER: usize = 64 * 1024;

thread_local! {
    /// The canonical-JSON buffer, reused: one allocation per thread, not per request.
    static CANONICAL: RefCell<Vec<u8>> = RefCell::new(Vec::with_capacity(256));
}

/// `b64url(SHA-256(canonical)[..16])` of the bytes `write` produces.
fn digest_of(write: impl Fn(&mut Vec<u8>)) -> [u8; 22] {
    let hash = |canonical: &[u8]| {
        // aws-lc's SHA-256 (SHA-NI) costs about 15% less per request than sha2's here.
        let hash = digest(&SHA256, canonical);
        let mut head = [0u8; 16];
        head.copy_from_slice(&hash.as_ref()[..16]);
        b64u_encode_16(&head)
    };
    // Without the thread's buffer (thread exiting, or in use): a buffer of its own.
    let fresh = || {
        let mut canonical = Vec::with_capacity(256);
        write(&mut canonical);
        hash(&canonical)
    };
    CANONICAL
        .try_with(|cell| match cell.try_borrow_mut() {
            Ok(mut canonical) => {
                canonical.clear();
                write(&mut canonical);
                let digest = hash(&canonical);
                // Arguments may be secret: leave no copy behind in the kept buffer.
                canonical.fill(0);
                canonical.clear();
                if canonical.capacity() > KEEP_BUFFER {
                    *canonical = Vec::with_capacity(256);
                }
                digest
            }
            Err(_) => fresh(),
        })
        .unwrap_or_else(|_| fresh())
}
