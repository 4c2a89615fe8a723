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
use std::time::Duration;

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
        let ttl = lifetime(ttl)
            .ok_or_else(|| config(&stateseal::Error::Data(stateseal::DataError::InvalidTtl)))?;
        let mut builder = Envelope::builder(Arc::clone(engine.codec.ring()), audience.as_deref())
            .codec(codec)
            .ttl(ttl);
        // The keyset's skew allowance S: records kept to exp + S, iat up to S ahead.
        if let Some(running) = &engine.running {
            builder = builder.max_skew(running.max_skew_duration());
        }
        let envelope = builder.build().map_err(|e| config(&e))?;
        Ok(Self {
            shared,
            envelope,
            requests: Requests::default(),
        })
    }
}

/// A configuration error as JavaScript sees it.
fn config(e: &stateseal::Error) -> Error<Code> {
    fail(Code::Config, e.to_string())
}

/// The state lifetime `ttl` (seconds) as the envelope takes it, or `None`
/// where the envelope refused it as seconds (`InvalidTtl`): not a finite
/// positive number. Every other lifetime is taken, as it was in seconds: one
/// past the longest `Duration` (about 585 billion years) as the longest, one
/// below a nanosecond as a nanosecond (states that never expire, or expire at
/// once, either way).
fn lifetime(ttl: f64) -> Option<Duration> {
    if !(ttl.is_finite() && ttl > 0.0) {
        return None;
    }
    let ttl = Duration::try_from_secs_f64(ttl).unwrap_or(Duration::MAX);
    Some(ttl.max(Duration::from_nanos(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lifetime_is_refused_only_where_it_was_as_seconds() {
        for bad in [0.0, -0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(lifetime(bad), None, "{bad}");
        }
        assert_eq!(lifetime(600.0), Some(Duration::from_secs(600)));
        assert_eq!(lifetime(0.25), Some(Duration::from_millis(250)));
        assert_eq!(lifetime(1e-12), Some(Duration::from_nanos(1)));
        assert_eq!(lifetime(1e300), Some(Duration::MAX));
    }
}
