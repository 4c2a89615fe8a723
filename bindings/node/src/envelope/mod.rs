//! The Rust envelope's claims from JavaScript: each round's identity from the
//! request as it arrived (the HTTP body parsed here, so arguments are bound
//! exactly as the Rust and Python servers bind them; once per round, see
//! `stateseal_binding::rounds`), the principal from its parts. The per-call
//! functions take no arguments: JavaScript writes them into its frame
//! (`frame.rs`) and names the envelope by its number, in a table of this
//! thread's envelopes (an `External` argument cost a lookup in a
//! process-wide locked table per call).

mod calls;
mod table;

use std::sync::Arc;

use napi::bindgen_prelude::*;
use stateseal::{Envelope, StateCodec};

use crate::{Code, Shared, fail, open};
use stateseal_binding::rounds::Requests;

pub use calls::{
    envelope_mint, envelope_mint_named, envelope_open, envelope_open_named, envelope_parse,
    envelope_verify,
};
pub use table::{EnvelopeTicket, envelope_number};

/// Seals and verifies states for one audience and lifetime.
pub(crate) struct EnvelopeCore {
    shared: Shared,
    envelope: Envelope,
    requests: Requests,
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
        self.with(|codec| codec.seal(payload))
    }

    fn seal_with_headroom(&self, buffer: Vec<u8>) -> std::result::Result<String, stateseal::Error> {
        self.with(|codec| codec.seal_with_headroom(buffer))
    }

    fn unseal(&self, token: &str) -> std::result::Result<Vec<u8>, stateseal::Error> {
        self.with(|codec| codec.unseal(token))
    }

    fn unseal_in_place(
        &self,
        token: &str,
    ) -> std::result::Result<(Vec<u8>, std::ops::Range<usize>), stateseal::Error> {
        self.with(|codec| codec.unseal_in_place(token))
    }

    /// The engine's ring's revocations (a closed codec revokes everything).
    fn revoked(&self, iat: f64, principal: Option<&[u8]>) -> bool {
        self.with(|codec| Ok(codec.revoked(iat, principal)))
            .unwrap_or(true)
    }
}

impl Through {
    /// `call` on the open engine's codec, borrowed for the call (no count taken).
    fn with<R>(
        &self,
        call: impl FnOnce(&stateseal::AesGcmCodec) -> std::result::Result<R, stateseal::Error>,
    ) -> std::result::Result<R, stateseal::Error> {
        match &*self.0.load() {
            Some(engine) => call(&engine.codec),
            None => Err(stateseal::Error::Config(crate::CLOSED.into())),
        }
    }
}

impl EnvelopeCore {
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
        Ok(Self {
            shared,
            envelope,
            requests: Requests::default(),
        })
    }
}
