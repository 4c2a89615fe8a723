//! Minting: the claims written and sealed for one round.

use super::{Envelope, Principal, RequestIdentity, claims, principal, single_use};
use crate::codec::{SEAL_HEADROOM, TAG_LEN};
use crate::error::Error;
use crate::json::{Text, is_plain_ascii};

impl Envelope {
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
        wtf8(state)?;
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
        wtf8(state)?;
        self.mint_wtf8(identity, state, principal, now, false)
    }

    /// [`Envelope::mint_at`] writing the token's ASCII bytes into `token`
    /// (cleared first) rather than a new `String`: for a binding that copies
    /// the token into its runtime's own string, from a buffer it keeps
    /// between calls (nothing allocated or freed per mint).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use stateseal::{AesGcmCodec, Envelope, KeyRing, RequestIdentity, RingHandle, Secret};
    ///
    /// let ring = Arc::new(RingHandle::new(KeyRing::from_secrets(&[Secret::generate()?])?));
    /// let envelope = Envelope::builder(Arc::new(AesGcmCodec::new(ring)), Some("bank")).build()?;
    /// let id = RequestIdentity::from_json("tools/call", br#"{"name":"transfer"}"#)?;
    /// let mut token = Vec::new();
    /// envelope.mint_into_at(&id, b"step 2", None, 1.8e9, &mut token)?;
    /// let token = String::from_utf8(token).unwrap();
    /// assert_eq!(envelope.verify_at(&id, &token, None, 1.8e9)?.as_str(), Some("step 2"));
    /// # Ok::<(), stateseal::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Envelope::mint_at`]; `token` is then empty.
    pub fn mint_into_at(
        &self,
        identity: &RequestIdentity,
        state: &[u8],
        principal: Option<&Principal>,
        now: f64,
        token: &mut Vec<u8>,
    ) -> Result<(), Error> {
        token.clear();
        // A plain state (printable ASCII) is UTF-8: the scan that finds it
        // plain, which the claims need anyway, spares the UTF-8 check.
        let plain = is_plain_ascii(state);
        if !plain {
            wtf8(state)?;
        }
        let payload = self.payload(identity, state, Some(plain), principal, now, false)?;
        self.codec.seal_with_headroom_into(payload, token)?;
        self.sealed(token, false).inspect_err(|_| token.clear())
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
        let payload = self.payload(identity, state, None, principal, now, single_use)?;
        let token = self.codec.seal_with_headroom(payload)?;
        self.sealed(token.as_bytes(), single_use)?;
        Ok(token)
    }

    /// The round's claims and `state` (plain or not, if known), written after
    /// room for the codec's header.
    fn payload(
        &self,
        identity: &RequestIdentity,
        state: &[u8],
        state_plain: Option<bool>,
        principal: Option<&Principal>,
        now: f64,
        single_use: bool,
    ) -> Result<Vec<u8>, Error> {
        let p_claim = principal
            .map(|p| principal::claim(p, &self.random))
            .transpose()?;
        let u_claim = single_use
            .then(|| single_use::SingleUseId::generate(&self.random).map(|id| id.encode()))
            .transpose()?;
        // The payload is written after room for the codec's header, so the built-in
        // codec encrypts it in place: no copy, and no plaintext copy left behind.
        Ok(claims::write_payload(
            &claims::MintClaims {
                iat: now,
                exp: now + self.ttl,
                identity,
                state,
                state_plain,
                audience: self.audience.as_deref(),
                principal_claim: p_claim.as_deref(),
                single_use: u_claim.as_deref(),
            },
            SEAL_HEADROOM,
            TAG_LEN,
            // The built-in codec's buffer from this thread's last seal, if it kept one.
            crate::codec::payload_buffer(),
        ))
    }

    /// Checks a sealed token before it may be sent, and counts it.
    fn sealed(&self, token: &[u8], single_use: bool) -> Result<(), Error> {
        if single_use && !token.starts_with(crate::key::TokenFormat::V2.prefix().as_bytes()) {
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
        Ok(())
    }
}

/// Nothing if `state` is WTF-8; otherwise the error every `_at` mint gives.
fn wtf8(state: &[u8]) -> Result<(), Error> {
    if is_wtf8(state) {
        Ok(())
    } else {
        Err(Error::Seal("state is neither UTF-8 nor WTF-8"))
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
