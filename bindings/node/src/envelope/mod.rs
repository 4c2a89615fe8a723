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
        // The engine's own codec, not one that looks the engine up again: every call
        // goes through `with_open` first, which refuses once the codec is closed (and
        // the engine empties the ring when it goes, so this reference keeps no keys).
        let codec: Arc<dyn StateCodec> = engine.codec.clone();
        let mut builder = Envelope::builder(codec, audience.as_deref()).ttl(ttl);
        // The keyset's skew allowance S: records kept to exp + S, iat up to S ahead.
        if let Some(running) = &engine.running {
            builder = builder.max_skew(running.max_skew);
        }
        let envelope = builder
            .build()
            .map_err(|e| fail(Code::Config, e.to_string()))?;
        Ok(Self {
            shared,
            envelope,
            requests: Requests::default(),
        })
    }
}
