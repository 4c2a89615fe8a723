//! The Rust envelope's claims from JavaScript: the round's identity from the
//! request as it arrived (the HTTP body's JSON-RPC message with the round's
//! id and method, parsed here, so arguments are bound exactly as the Rust and
//! Python servers bind them), the principal from its parts.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;
use stateseal::{Envelope, Principal, RequestIdentity, StateCodec};

use crate::{Code, Shared, fail, open, thrown};

/// The caller a state is bound to, by its parts (as the Rust servers' `AuthenticatedPrincipal`).
#[napi(object)]
pub struct PrincipalParts {
    pub client_id: String,
    pub issuer: Option<String>,
    pub subject: Option<String>,
}

/// A principal as the caller gave it: its parts, or a text of its own (as the Python SDK binds).
type PrincipalArg = Option<Either<String, PrincipalParts>>;

/// Seals and verifies states for one audience and lifetime.
#[napi]
pub struct NativeEnvelope {
    shared: Shared,
    envelope: Envelope,
}

/// Seals through whatever engine the codec has open, refusing once it is closed.
struct Through(Shared);

impl std::fmt::Debug for Through {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Through { .. }")
    }
}

impl StateCodec for Through {
    fn seal(&self, payload: &[u8]) -> std::result::Result<String, stateseal::Error> {
        self.engine()?.codec.seal(payload)
    }

    fn seal_with_headroom(&self, buffer: Vec<u8>) -> std::result::Result<String, stateseal::Error> {
        self.engine()?.codec.seal_with_headroom(buffer)
    }

    fn unseal(&self, token: &str) -> std::result::Result<Vec<u8>, stateseal::Error> {
        self.engine()?.codec.unseal(token)
    }
}

impl Through {
    fn engine(&self) -> std::result::Result<Arc<crate::Engine>, stateseal::Error> {
        self.0
            .load_full()
            .ok_or(stateseal::Error::Config(crate::CLOSED.into()))
    }
}

/// The identity of the round `method` / `id` in `body` (one JSON-RPC message or a batch).
fn identity(
    method: &str,
    id_json: &str,
    body: &str,
) -> std::result::Result<RequestIdentity, Error<Code>> {
    let unbound = || fail(Code::Rejected, "malformed");
    let id: Value = serde_json::from_str(id_json).map_err(|_| unbound())?;
    let body: Value = serde_json::from_str(body).map_err(|_| unbound())?;
    let matches = |m: &&Value| {
        m.get("id") == Some(&id) && m.get("method").and_then(Value::as_str) == Some(method)
    };
    let message = match &body {
        Value::Array(batch) => batch.iter().find(matches),
        one => Some(one).filter(matches),
    }
    .ok_or_else(unbound)?;
    let params = message
        .get("params")
        .cloned()
        .unwrap_or(Value::Object(Default::default()));
    RequestIdentity::from_serde(method, &params).map_err(|_| unbound())
}

fn principal(p: PrincipalArg) -> Option<Principal> {
    p.map(|p| match p {
        Either::A(text) => Principal::new(text),
        Either::B(p) => {
            Principal::from_components(&p.client_id, p.issuer.as_deref(), p.subject.as_deref())
        }
    })
}

impl NativeEnvelope {
    pub(crate) fn new(
        shared: Shared,
        audience: Option<String>,
        ttl: f64,
    ) -> std::result::Result<Self, Error<Code>> {
        let engine = open(&shared)?;
        if let Some(limit) = engine.ttl
            && ttl > limit
        {
            return Err(fail(
                Code::Config,
                format!(
                    "ttlSeconds {ttl} exceeds the keyset's state lifetime T = {limit}: rotation keeps keys for T only"
                ),
            ));
        }
        let envelope =
            Envelope::builder(Arc::new(Through(Arc::clone(&shared))), audience.as_deref())
                .ttl(ttl)
                .build()
                .map_err(|e| fail(Code::Config, e.to_string()))?;
        Ok(Self { shared, envelope })
    }
}

#[napi]
impl NativeEnvelope {
    /// Seals `state` for the round (`method`, its JSON-RPC `id` as JSON, the HTTP `body` it came in), bound to `principal`, at `now` (seconds).
    #[napi]
    pub fn mint(
        &self,
        method: String,
        id_json: String,
        body: String,
        state: String,
        principal_parts: PrincipalArg,
        now: f64,
    ) -> std::result::Result<String, Error<Code>> {
        open(&self.shared)?;
        let id = identity(&method, &id_json, &body)?;
        self.envelope
            .mint_at(
                &id,
                state.as_bytes(),
                principal(principal_parts).as_ref(),
                now,
            )
            .map_err(|e| thrown(&e))
    }

    /// The state `token` carries, if it was minted for this request, caller and audience and has not expired at `now`.
    #[napi]
    pub fn verify(
        &self,
        method: String,
        id_json: String,
        body: String,
        token: String,
        principal_parts: PrincipalArg,
        now: f64,
    ) -> std::result::Result<String, Error<Code>> {
        open(&self.shared)?;
        let id = identity(&method, &id_json, &body)?;
        let text = self
            .envelope
            .verify_at(&id, &token, principal(principal_parts).as_ref(), now)
            .map_err(|e| thrown(&e))?;
        text.into_string()
            .map_err(|_| fail(Code::Rejected, "malformed"))
    }
}
