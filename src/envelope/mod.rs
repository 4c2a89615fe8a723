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
mod open;
mod options;
mod principal;
mod sdk_payload;
mod single_use;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

pub use batch::RequestBatch;
pub use claims::{ENVELOPE_VERSION, FUTURE_SKEW};
pub use identity::{CARRIER_METHODS, RequestIdentity};
pub use options::{MintOptions, OpenOptions, Opened};
pub use principal::{PRINCIPAL_LABEL, Principal};
pub use sdk_payload::SdkPayload;
pub use single_use::SingleUse;

use crate::clock::{Clock, SystemClock};
use crate::codec::{AesGcmCodec, StateCodec};
use crate::error::{DataError, Error};
use crate::random::RandomSource;
use crate::ring::RingHandle;

/// The default state lifetime: ten minutes.
pub const DEFAULT_TTL: Duration = Duration::from_secs(600);

/// The default longest token [`Envelope::open`] decodes: 1 MiB of text, about
/// 768 KiB of sealed claims.
pub const DEFAULT_MAX_TOKEN_LEN: usize = 1 << 20;

/// No configured `max_token_len` may be shorter than this (no token would fit).
const MIN_MAX_TOKEN_LEN: usize = 256;

/// Mints and verifies sealed states for one service.
///
/// ```
/// use std::sync::Arc;
/// use stateseal::{Envelope, KeyRing, MintOptions, OpenOptions, RequestIdentity, RingHandle, Secret};
///
/// let ring = Arc::new(RingHandle::new(KeyRing::from_secrets(&[Secret::new(vec![7; 32])?])?));
/// let envelope = Envelope::builder(ring, Some("my-server")).build()?;
/// let id = RequestIdentity::from_json("tools/call", br#"{"name":"deploy","arguments":{"env":"prod"}}"#)?;
/// let token = envelope.mint(&id, "awaiting-confirm", MintOptions::new())?;
/// let opened = envelope.open(&id, &token, OpenOptions::new())?;
/// assert_eq!(opened.state.as_str(), Some("awaiting-confirm"));
/// # Ok::<(), stateseal::Error>(())
/// ```
#[derive(Debug)]
pub struct Envelope {
    codec: Arc<dyn StateCodec>,
    /// Where the revocations come from: the ring the key plane publishes.
    ring: Arc<RingHandle>,
    ttl: Duration,
    max_skew: Duration,
    /// `ttl` and `max_skew` in the seconds the claims are written in.
    ttl_secs: f64,
    max_skew_secs: f64,
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
    codec: Option<Arc<dyn StateCodec>>,
    ring: Arc<RingHandle>,
    ttl: Duration,
    max_skew: Duration,
    max_token_len: usize,
    audience: Option<String>,
    clock: Arc<dyn Clock>,
    random: RandomSource,
}

impl Envelope {
    /// Starts a builder over the keys and revocations of `ring` (sealed by
    /// the built-in [`AesGcmCodec`] unless [`EnvelopeBuilder::codec`] says
    /// otherwise). `audience` is the service identity (usually the server's
    /// name) and must be stated: `None` deliberately mints audience-free
    /// tokens that any service sharing the keys would accept.
    pub fn builder(ring: Arc<RingHandle>, audience: Option<&str>) -> EnvelopeBuilder {
        EnvelopeBuilder {
            codec: None,
            ring,
            ttl: DEFAULT_TTL,
            max_skew: FUTURE_SKEW,
            max_token_len: DEFAULT_MAX_TOKEN_LEN,
            audience: audience.map(str::to_owned),
            clock: Arc::new(SystemClock),
            random: RandomSource::Os,
        }
    }

    /// The audience this envelope stamps and expects.
    pub fn audience(&self) -> Option<&str> {
        self.audience.as_deref()
    }

    /// The state lifetime.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Whether the ring's revocations cover a state issued at `iat` (Unix
    /// seconds) for `principal`: the ring loaded now, not the one that
    /// unsealed (a newer list only knows more).
    fn revoked(&self, iat: f64, principal: Option<&Principal>) -> bool {
        self.ring.may_revoke()
            && self.ring.load().as_ref().is_some_and(|ring| {
                ring.revocations()
                    .covers_secs(iat, principal.map(Principal::as_bytes))
            })
    }
}

impl EnvelopeBuilder {
    /// State lifetime (default [`DEFAULT_TTL`], ten minutes); must not be zero.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// How far ahead of this verifier's clock a state's `iat` may be: the
    /// fleet's largest clock difference S. The default, [`FUTURE_SKEW`]
    /// (60 s), is the Python SDK's fixed value; above it, Python servers in the
    /// same fleet reject states minted by clocks further ahead than 60 s.
    pub fn max_skew(mut self, max_skew: Duration) -> Self {
        self.max_skew = max_skew;
        self
    }

    /// Seals and opens with `codec` instead of the built-in one (the ring
    /// still supplies the revocations).
    pub fn codec(mut self, codec: Arc<dyn StateCodec>) -> Self {
        self.codec = Some(codec);
        self
    }

    /// The longest token [`Envelope::open`] will decode (default
    /// [`DEFAULT_MAX_TOKEN_LEN`], 1 MiB). Longer echoes are rejected as
    /// malformed before any work; [`Envelope::mint`] refuses a state whose token
    /// would be longer. Stricter than the Python SDK, which has no limit.
    pub fn max_token_len(mut self, bytes: usize) -> Self {
        self.max_token_len = bytes;
        self
    }

    /// The clock [`Envelope::mint`] and [`Envelope::open`] read unless
    /// told the time ([`MintOptions::at`], [`OpenOptions::at`]).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Replaces the salt randomness (the `deterministic-testing` feature only).
    #[cfg(feature = "deterministic-testing")]
    pub fn random_source(mut self, random: RandomSource) -> Self {
        self.random = random;
        self
    }

    /// Validates and builds.
    ///
    /// # Errors
    /// [`DataError::InvalidTtl`] for a zero TTL; [`Error::Config`] for a
    /// `max_token_len` too short for any token.
    pub fn build(self) -> Result<Envelope, Error> {
        if self.ttl.is_zero() {
            return Err(Error::Data(DataError::InvalidTtl));
        }
        if self.max_token_len < MIN_MAX_TOKEN_LEN {
            return Err(Error::Config(format!(
                "max_token_len must be at least {MIN_MAX_TOKEN_LEN} bytes"
            )));
        }
        let codec = self
            .codec
            .unwrap_or_else(|| Arc::new(AesGcmCodec::new(Arc::clone(&self.ring))));
        Ok(Envelope {
            codec,
            ring: self.ring,
            ttl: self.ttl,
            max_skew: self.max_skew,
            ttl_secs: self.ttl.as_secs_f64(),
            max_skew_secs: self.max_skew.as_secs_f64(),
            max_token_len: self.max_token_len,
            audience: self.audience,
            clock: self.clock,
            random: self.random,
        })
    }
}
