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
mod principal;
mod single_use;

use std::sync::Arc;

pub use batch::RequestBatch;
pub use claims::{ENVELOPE_VERSION, FUTURE_SKEW_SECS};
pub use identity::{CARRIER_METHODS, RequestIdentity};
pub use principal::{PRINCIPAL_LABEL, Principal};
pub use single_use::SingleUse;

use crate::clock::{Clock, SystemClock};
use crate::codec::{SEAL_HEADROOM, StateCodec, TAG_LEN};
use crate::error::Error;
use crate::json::Text;
use crate::random::RandomSource;
use crate::reason::RejectReason;

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

    /// Seals `state` for the round `identity`, bound to `principal` when given.
    ///
    /// # Errors
    /// [`Error::Random`] or a codec error; nothing may be sent then.
    pub fn mint(
        &self,
        identity: &RequestIdentity,
        state: &str,
        principal: Option<&Principal>,
    ) -> Result<String, Error> {
        self.mint_wtf8(
            identity,
            state.as_bytes(),
            principal,
            self.clock.now(),
            false,
        )
    }

    /// Seals a single-use `state`: it carries a random id, and it verifies
    /// only through [`Envelope::open`], whose caller records the id in a
    /// [`ReplayStore`](crate::replay::ReplayStore) before accepting it (the
    /// [`Boundary`](crate::boundary::Boundary) does this for the tools,
    /// prompts and resources it is told are single-use).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use stateseal::{AesGcmCodec, Envelope, Error, KeyRing, RejectReason, RequestIdentity, RingHandle, RingKey, Secret, TokenFormat};
    ///
    /// let ring = Arc::new(RingHandle::new(KeyRing::from_keys(vec![Arc::new(RingKey::with_format(&Secret::generate()?, TokenFormat::V2))])?));
    /// let envelope = Envelope::builder(Arc::new(AesGcmCodec::new(ring)), Some("bank")).build()?;
    /// let id = RequestIdentity::from_json("tools/call", br#"{"name":"transfer","arguments":{"amount":5}}"#)?;
    /// let token = envelope.mint_single_use(&id, "confirm", None)?;
    /// // The plain verify cannot record it, so it refuses it.
    /// assert_eq!(envelope.verify(&id, &token, None).unwrap_err(), Error::Rejected(RejectReason::ReplayStoreUnavailable));
    /// let (state, single_use) = envelope.open(&id, &token, None)?;
    /// assert_eq!(state.as_str(), Some("confirm"));
    /// assert!(single_use.is_some());
    /// # Ok::<(), stateseal::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Envelope::mint`], plus [`Error::Seal`] when the ring's primary key
    /// is a `v1.` key: the Python SDK's codec opens `v1.` tokens and ignores
    /// the id, so a mixed fleet would accept a replay.
    pub fn mint_single_use(
        &self,
        identity: &RequestIdentity,
        state: &str,
        principal: Option<&Principal>,
    ) -> Result<String, Error> {
        self.mint_wtf8(
            identity,
            state.as_bytes(),
            principal,
            self.clock.now(),
            true,
        )
    }

    /// [`Envelope::mint_single_use`] at an explicit time (`state` as in [`Envelope::mint_at`]).
    ///
    /// # Errors
    /// As [`Envelope::mint_single_use`] and [`Envelope::mint_at`].
    pub fn mint_single_use_at(
        &self,
        identity: &RequestIdentity,
        state: &[u8],
        principal: Option<&Principal>,
        now: f64,
    ) -> Result<String, Error> {
        if !is_wtf8(state) {
            return Err(Error::Seal("state is neither UTF-8 nor WTF-8"));
        }
        self.mint_wtf8(identity, state, principal, now, true)
    }

    /// [`Envelope::mint`] of a [`Text`] state (which may hold a lone surrogate).
    ///
    /// # Errors
    /// As [`Envelope::mint`].
    pub fn mint_text(
        &self,
        identity: &RequestIdentity,
        state: &Text,
        principal: Option<&Principal>,
    ) -> Result<String, Error> {
        self.mint_wtf8(
            identity,
            state.as_bytes(),
            principal,
            self.clock.now(),
            false,
        )
    }

    /// [`Envelope::mint`] at an explicit time (`state` is UTF-8 or WTF-8 bytes).
    ///
    /// # Errors
    /// As [`Envelope::mint`], plus [`Error::Seal`] when `state` is not WTF-8
    /// (a lone surrogate is allowed; a pair of surrogates must be written as
    /// the one code point it stands for, or verify could not give it back).
    pub fn mint_at(
        &self,
        identity: &RequestIdentity,
        state: &[u8],
        principal: Option<&Principal>,
        now: f64,
    ) -> Result<String, Error> {
        if !is_wtf8(state) {
            return Err(Error::Seal("state is neither UTF-8 nor WTF-8"));
        }
        self.mint_wtf8(identity, state, principal, now, false)
    }

    /// Mints a state already known to be WTF-8 (a `&str` or a [`Text`]).
    fn mint_wtf8(
        &self,
        identity: &RequestIdentity,
        state: &[u8],
        principal: Option<&Principal>,
        now: f64,
        single_use: bool,
    ) -> Result<String, Error> {
        let p_claim = principal
            .map(|p| principal::claim(p, &self.random))
            .transpose()?;
        let u_claim = single_use
            .then(|| single_use::SingleUseId::generate(&self.random).map(|id| id.encode()))
            .transpose()?;
        // The payload is written after room for the codec's header, so the built-in
        // codec encrypts it in place: no copy, and no plaintext copy left behind.
        let payload = claims::write_payload(
            &claims::MintClaims {
                iat: now,
                exp: now + self.ttl,
                identity,
                state,
                audience: self.audience.as_deref(),
                principal_claim: p_claim.as_deref(),
                single_use: u_claim.as_deref(),
            },
            SEAL_HEADROOM,
            TAG_LEN,
            // The built-in codec's buffer from this thread's last seal, if it kept one.
            crate::codec::payload_buffer(),
        );
        let token = self.codec.seal_with_headroom(payload)?;
        if single_use && !token.starts_with(crate::TokenFormat::V2.prefix()) {
            return Err(Error::Seal(
                "single-use states need a v2 key (a keyset key; `stateseal rotate` gives one): the Python SDK's codec opens v1 tokens and would not enforce single use",
            ));
        }
        if token.len() > self.max_token_len {
            // Every verifier would reject it: better an error now than a dead state.
            return Err(Error::Seal(
                "state too large: its token exceeds max_token_len",
            ));
        }
        metrics::counter!("stateseal_seals_total").increment(1);
        Ok(token)
    }

    /// Verifies an echoed `token` for the round `identity` and returns the state it carries.
    ///
    /// # Errors
    /// [`Error::Rejected`] with a log-only [`RejectReason`].
    pub fn verify(
        &self,
        identity: &RequestIdentity,
        token: &str,
        principal: Option<&Principal>,
    ) -> Result<Text, Error> {
        self.verify_at(identity, token, principal, self.clock.now())
    }

    /// [`Envelope::verify`] at an explicit time.
    ///
    /// # Errors
    /// As [`Envelope::verify`]; a single-use state is refused with
    /// [`RejectReason::ReplayStoreUnavailable`] (this path records nothing).
    pub fn verify_at(
        &self,
        identity: &RequestIdentity,
        token: &str,
        principal: Option<&Principal>,
        now: f64,
    ) -> Result<Text, Error> {
        let result = match self.check(identity, token, principal, now) {
            Ok(c) if c.single_use.is_some() => {
                Err(Error::Rejected(RejectReason::ReplayStoreUnavailable))
            }
            other => other.map(|c| c.state),
        };
        self.count(result)
    }

    /// Verifies an echoed `token` like [`Envelope::verify`], and accepts
    /// single-use states too: their [`SingleUse`] record comes back with
    /// the state, and the state may be used only once that record has
    /// landed in the fleet's replay store (a record already there means a
    /// replay: refuse it with [`RejectReason::Replayed`]).
    ///
    /// # Errors
    /// As [`Envelope::verify`].
    pub fn open(
        &self,
        identity: &RequestIdentity,
        token: &str,
        principal: Option<&Principal>,
    ) -> Result<(Text, Option<SingleUse>), Error> {
        self.open_at(identity, token, principal, self.clock.now())
    }

    /// [`Envelope::open`] at an explicit time.
    ///
    /// # Errors
    /// As [`Envelope::verify`].
    pub fn open_at(
        &self,
        identity: &RequestIdentity,
        token: &str,
        principal: Option<&Principal>,
        now: f64,
    ) -> Result<(Text, Option<SingleUse>), Error> {
        let checked = self.count(self.check(identity, token, principal, now))?;
        let single_use = checked
            .single_use
            .map(|id| SingleUse::new(&id, self.audience.as_deref(), checked.exp, self.max_skew));
        Ok((checked.state, single_use))
    }

    /// Unseals and checks the claims; counts nothing.
    fn check(
        &self,
        identity: &RequestIdentity,
        token: &str,
        principal: Option<&Principal>,
        now: f64,
    ) -> Result<claims::Checked, Error> {
        // Refused before any decoding: the echo is attacker-controlled and unbounded.
        let result = if token.len() > self.max_token_len {
            Err(Error::Rejected(RejectReason::Malformed))
        } else {
            self.codec.unseal_in_place(token)
        };
        let result = result.map_err(|e| match e {
            Error::Rejected(r) => Error::Rejected(r),
            // A custom codec failing in another way still fails closed.
            _ => Error::Rejected(RejectReason::CodecError),
        });
        result
            .and_then(|(buffer, payload)| {
                claims::check(
                    buffer,
                    payload,
                    identity,
                    self.audience.as_deref(),
                    principal,
                    now,
                    self.max_skew,
                )
            })
            // Last: only a state that passed every other check is looked up.
            .and_then(|c| {
                if self
                    .codec
                    .revoked(c.iat, principal.map(Principal::as_bytes))
                {
                    Err(Error::Rejected(RejectReason::Revoked))
                } else {
                    Ok(c)
                }
            })
    }

    /// Counts a verdict in the unseal and rejection metrics.
    fn count<T>(&self, result: Result<T, Error>) -> Result<T, Error> {
        match &result {
            Ok(_) => metrics::counter!("stateseal_unseals_total").increment(1),
            Err(e) => {
                let reason = e.reject_reason().map_or("error", RejectReason::as_str);
                metrics::counter!("stateseal_rejections_total", "reason" => reason).increment(1);
            }
        }
        result
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

/// Whether `bytes` is WTF-8: UTF-8 that may also encode lone surrogates.
///
/// A high surrogate directly followed by a low one is not WTF-8 (that pair is
/// one supplementary code point, written in four bytes): minted, it would come
/// back from verify as that code point, not as the bytes given.
fn is_wtf8(bytes: &[u8]) -> bool {
    if std::str::from_utf8(bytes).is_ok() {
        return true;
    }
    let surrogate = |i: usize| -> Option<u8> {
        match bytes.get(i..i + 3) {
            Some(&[0xed, second @ 0xa0..=0xbf, 0x80..=0xbf]) => Some(second),
            _ => None,
        }
    };
    // Re-encode surrogate code points (ED A0..BF xx) as a placeholder and re-check.
    let mut probe = bytes.to_vec();
    let mut i = 0;
    while i + 2 < probe.len() {
        if let Some(second) = surrogate(i) {
            let high = second <= 0xaf;
            if high && surrogate(i + 3).is_some_and(|next| next >= 0xb0) {
                return false;
            }
            probe[i..i + 3].copy_from_slice("\u{fffd}".as_bytes());
            i += 3;
        } else {
            i += 1;
        }
    }
    std::str::from_utf8(&probe).is_ok()
}
