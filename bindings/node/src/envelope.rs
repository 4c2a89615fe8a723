//! The Rust envelope's claims from JavaScript: the round's identity from the
//! request as it arrived (a [`NativeRequest`]: the HTTP body parsed here, so
//! arguments are bound exactly as the Rust and Python servers bind them), the
//! principal from its parts.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use stateseal::{Envelope, Principal, RequestIdentity, StateCodec};

use crate::request::NativeRequest;
use crate::single_use::NativeSingleUse;
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

    /// The engine's ring's revocations (a closed codec revokes everything).
    fn revoked(&self, iat: f64, principal: Option<&[u8]>) -> bool {
        self.engine()
            .map_or(true, |e| e.codec.revoked(iat, principal))
    }
}

impl Through {
    fn engine(&self) -> std::result::Result<Arc<crate::Engine>, stateseal::Error> {
        self.0
            .load_full()
            .ok_or(stateseal::Error::Config(crate::CLOSED.into()))
    }
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

    /// The round's identity in `request`, and the engine once the codec is known to be open.
    fn round(
        &self,
        request: &NativeRequest,
        method: &str,
        id_json: &str,
    ) -> std::result::Result<(RequestIdentity, Arc<crate::Engine>), Error<Code>> {
        let engine = open(&self.shared)?;
        let id = request
            .batch
            .identity(method, id_json.as_bytes())
            .map_err(|e| thrown(&e))?;
        Ok((id, engine))
    }
}

#[napi]
impl NativeEnvelope {
    /// Seals `state` for the round (`method`, its JSON-RPC `id` as JSON, in `request`), bound to `principal`, at `now` (seconds).
    #[napi]
    pub fn mint(
        &self,
        request: &NativeRequest,
        method: String,
        id_json: String,
        state: String,
        principal_parts: PrincipalArg,
        now: f64,
    ) -> std::result::Result<String, Error<Code>> {
        let (id, engine) = self.round(request, &method, &id_json)?;
        let p = principal(principal_parts);
        let single_use = engine
            .running
            .as_ref()
            .is_some_and(|r| r.is_single_use(&id));
        if single_use {
            self.envelope
                .mint_single_use_at(&id, state.as_bytes(), p.as_ref(), now)
        } else {
            self.envelope
                .mint_at(&id, state.as_bytes(), p.as_ref(), now)
        }
        .map_err(|e| thrown(&e))
    }

    /// The state `token` carries, if it was minted for this request, caller and audience and has not expired at `now`.
    /// Refuses single-use states (`replay store unavailable`): `open` accepts them once recorded.
    #[napi]
    pub fn verify(
        &self,
        request: &NativeRequest,
        method: String,
        id_json: String,
        token: String,
        principal_parts: PrincipalArg,
        now: f64,
    ) -> std::result::Result<String, Error<Code>> {
        let (id, _) = self.round(request, &method, &id_json)?;
        let text = self
            .envelope
            .verify_at(&id, &token, principal(principal_parts).as_ref(), now)
            .map_err(|e| thrown(&e))?;
        text.into_string()
            .map_err(|_| fail(Code::Rejected, "malformed"))
    }

    /// As `verify`, and single-use states too: a multi-use state's text comes
    /// back at once (no store call, no thread hop); a single-use state comes
    /// back as a [`NativeSingleUse`], whose `record()` gives the text only once
    /// the replay store has recorded it.
    #[napi(ts_return_type = "string | NativeSingleUse")]
    pub fn open(
        &self,
        request: &NativeRequest,
        method: String,
        id_json: String,
        token: String,
        principal_parts: PrincipalArg,
        now: f64,
    ) -> std::result::Result<Either<String, NativeSingleUse>, Error<Code>> {
        let (id, _) = self.round(request, &method, &id_json)?;
        let (text, once) = self
            .envelope
            .open_at(&id, &token, principal(principal_parts).as_ref(), now)
            .map_err(|e| thrown(&e))?;
        let text = text
            .into_string()
            .map_err(|_| fail(Code::Rejected, "malformed"))?;
        Ok(match once {
            None => Either::A(text),
            Some(once) => Either::B(NativeSingleUse::new(Arc::clone(&self.shared), once, text)),
        })
    }
}
