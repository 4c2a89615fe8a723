//! The claims envelope: what is sealed inside every token, and its checks.
//!
//! Threat model: the echo is attacker-controlled. Authenticity comes from the
//! codec; the envelope stops an authentic token from being *misused*: replayed
//! after its TTL (`exp`, with `iat` at most 60 s ahead for clock skew), against
//! another tool, prompt, resource, method or arguments (`m`, `t`, `a`), at
//! another service sharing the keys (`aud`), or by another caller (`p`, a
//! salted hash so the token does not reveal who the caller is). Replay of the
//! same round by the same caller within the TTL is allowed by design: the
//! spec makes retries idempotent. Every check fails closed with a log-only
//! reason; the wire sees one frozen error.

mod batch;
mod claims;
mod identity;
mod mint;
mod principal;
mod sdk_payload;
mod single_use;
mod verify;

use std::sync::Arc;

pub use batch::RequestBatch;
pub use claims::{ENVELOPE_VERSION, FUTURE_SKEW_SECS};
pub use identity::{CARRIER_METHODS, RequestIdentity};
pub use principal::{PRINCIPAL_LABEL, Principal};
pub use sdk_payload::SdkPayload;
pub use single_use::SingleUse;

use crate::clock::{Clock, SystemClock};
use crate::codec::StateCodec;
use crate::error::Error;
use crate::random::RandomSource;

/// The default state lifetime, in seconds.
pub const DEFAULT_TTL_SECS: f64 = 600.0;

/// The default longest token [`Envelope::verify`] decodes: 1 MiB of text, about
/// 768 KiB of sealed claims.
pub const DEFAULT_MAX_TOKEN_LEN: usize = 1 << 20;

/// No configured `max_token_len` may be shorter than this (no token would fit).
const MIN_MAX_TOKEN_LEN: usize = 256;

/// Mints and verifies sealed states for one service.
///
/// ```
/// use std::sync::Arc;
/// use stateseal::{AesGcmCodec, Envelope, KeyRing, RequestIdentity, RingHandle, RingKey, Secret, TokenFormat};
///
/// let ring = Arc::new(RingHandle::new(KeyRing::from_secrets(&[Secret::new(vec![7; 32])?])?));
/// let envelope = Envelope::builder(Arc::new(AesGcmCodec::new(ring)), Some("my-server")).build()?;
/// let id = RequestIdentity::from_json("tools/call", br#"{"name":"deploy","arguments":{"env":"prod"}}"#)?;
/// let token = envelope.mint(&id, "awaiting-confirm", None)?;
/// let state = envelope.verify(&id, &token, None)?;
/// assert_eq!(state.as_str(), Some("awaiting-confirm"));
/// # Ok::<(), stateseal::Error>(())
/// ```
#[derive(Debug)]
pub struct Envelope {
    codec: Arc<dyn StateCodec>,
    ttl: f64,
    max_skew: f64,
    max_token_len: usize,
    audience: Option<String>,
    clock: Arc<dyn Clock>,
    random: RandomSource,
}

impl std::fmt::Debug for dyn StateCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateCodec")
    }
}

/// Builder for [`Envelope`].
#[derive(Debug)]
pub struct EnvelopeBuilder {
    inner: Envelope,
}

impl Envelope {
    /// Starts a builder. `audience` is the service identity (usually the server's
    /// name) and must be stated: `None` deliberately mints audience-free tokens
    /// that any service sharing the keys would accept.
    pub fn builder(codec: Arc<dyn StateCodec>, audience: Option<&str>) -> EnvelopeBuilder {
        EnvelopeBuilder {
            inner: Self {
                codec,
                ttl: DEFAULT_TTL_SECS,
                max_skew: FUTURE_SKEW_SECS,
                max_token_len: DEFAULT_MAX_TOKEN_LEN,
                audience: audience.map(str::to_owned),
                clock: Arc::new(SystemClock),
                random: RandomSource::Os,
            },
        }
    }

    /// The audience this envelope stamps and expects.
    pub fn audience(&self) -> Option<&str> {
        self.audience.as_deref()
    }

    /// The state lifetime in seconds.
    pub fn ttl(&self) -> f64 {
        self.ttl
    }
}

impl EnvelopeBuilder {
    /// State lifetime in seconds (default 600); must be positive and finite.
    pub fn ttl(mut self, secs: f64) -> Self {
        self.inner.ttl = secs;
        self
    }

    /// How far ahead of this verifier's clock a state's `iat` may be: the
    /// fleet's largest clock difference S. The default, [`FUTURE_SKEW_SECS`]
    /// (60 s), is the Python SDK's fixed value; above it, Python servers in the
    /// same fleet reject states minted by clocks further ahead than 60 s.
    pub fn max_skew(mut self, secs: f64) -> Self {
        self.inner.max_skew = secs;
        self
    }

    /// The longest token [`Envelope::verify`] will decode (default
    /// [`DEFAULT_MAX_TOKEN_LEN`], 1 MiB). Longer echoes are rejected as
    /// malformed before any work; [`Envelope::mint`] refuses a state whose token
    /// would be longer. Stricter than the Python SDK, which has no limit.
    pub fn max_token_len(mut self, bytes: usize) -> Self {
        self.inner.max_token_len = bytes;
        self
    }

    /// The clock used by [`Envelope::mint`] and [`Envelope::verify`].
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.inner.clock = clock;
        self
    }

    /// Replaces the salt randomness (the `deterministic-testing` feature only).
    #[cfg(feature = "deterministic-testing")]
    pub fn random_source(mut self, random: RandomSource) -> Self {
        self.inner.random = random;
        self
    }

    /// Validates and builds.
    ///
    /// # Errors
    /// [`Error::InvalidTtl`] for a TTL that is not a positive finite number;
    /// [`Error::Config`] for a negative or non-finite `max_skew`, or a
    /// `max_token_len` too short for any token.
    pub fn build(self) -> Result<Envelope, Error> {
        if !(self.inner.ttl.is_finite() && self.inner.ttl > 0.0) {
            return Err(Error::InvalidTtl);
        }
        if !(self.inner.max_skew.is_finite() && self.inner.max_skew >= 0.0) {
            return Err(Error::Config(
                "max_skew must be zero or a positive number of seconds".into(),
            ));
        }
        if self.inner.max_token_len < MIN_MAX_TOKEN_LEN {
            return Err(Error::Config(format!(
                "max_token_len must be at least {MIN_MAX_TOKEN_LEN} bytes"
            )));
        }
        Ok(self.inner)
    }
}
