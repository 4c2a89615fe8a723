//! Minting: the claims written and sealed for one round.

use super::{Envelope, MintOptions, RequestIdentity, claims, principal, single_use};
use crate::codec::{SEAL_HEADROOM, TAG_LEN};
use crate::error::{DataError, Error};
use crate::json::is_plain_ascii;

impl Envelope {
    /// Seals `state` (UTF-8, or WTF-8: a lone surrogate is allowed) for the
    /// round `identity`, as `options` say.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use stateseal::{Envelope, DataError, Error, KeyRing, MintOptions, OpenOptions, RejectReason, RequestIdentity, RingHandle, RingKey, Secret, TokenFormat};
    ///
    /// let ring = Arc::new(RingHandle::new(KeyRing::from_keys(vec![Arc::new(RingKey::with_format(&Secret::generate()?, TokenFormat::V2))])?));
    /// let envelope = Envelope::builder(ring, Some("bank")).build()?;
    /// let id = RequestIdentity::from_json("tools/call", br#"{"name":"transfer","arguments":{"amount":5}}"#)?;
    /// let token = envelope.mint(&id, "confirm", MintOptions::new().single_use(true))?;
    /// // A caller that records nothing cannot enforce single use, so it is refused.
    /// let refused = envelope.open(&id, &token, OpenOptions::new()).unwrap_err();
    /// assert_eq!(refused, Error::Rejected(RejectReason::ReplayStoreUnavailable));
    /// let opened = envelope.open(&id, &token, OpenOptions::new().records_single_use(true))?;
    /// assert_eq!(opened.state.as_str(), Some("confirm"));
    /// assert!(opened.single_use.is_some());
    /// # Ok::<(), stateseal::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`DataError::Random`] or a codec error, nothing may be sent then;
    /// [`DataError::Seal`] when `state` is neither UTF-8 nor WTF-8 (a pair of
    /// surrogates must be written as the one code point it stands for, or
    /// open could not give it back), when its token would exceed
    /// `max_token_len`, or for a single-use state under a `v1.` primary key
    /// (the Python SDK's codec opens `v1.` tokens and ignores the id, so a
    /// mixed fleet would accept a replay).
    pub fn mint(
        &self,
        identity: &RequestIdentity,
        state: impl AsRef<[u8]>,
        options: MintOptions<'_>,
    ) -> Result<String, Error> {
        let payload = self.payload(identity, state.as_ref(), &options)?;
        let token = match self.codec.in_place() {
            Some(codec) => codec.seal_in_place_to_string(payload)?,
            None => self.codec.seal(&payload[SEAL_HEADROOM..])?,
        };
        self.sealed(token.as_bytes(), options.single_use)?;
        Ok(token)
    }

    /// [`Envelope::mint`] writing the token's ASCII bytes into `token`
    /// (cleared first) rather than a new `String`: for a binding that copies
    /// the token into its runtime's own string, from a buffer it keeps
    /// between calls (nothing allocated or freed per mint).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use stateseal::{Envelope, KeyRing, MintOptions, OpenOptions, RequestIdentity, RingHandle, Secret, UnixTime};
    ///
    /// let ring = Arc::new(RingHandle::new(KeyRing::from_secrets(&[Secret::generate()?])?));
    /// let envelope = Envelope::builder(ring, Some("bank")).build()?;
    /// let id = RequestIdentity::from_json("tools/call", br#"{"name":"transfer"}"#)?;
    /// let now = UnixTime::from_secs(1_800_000_000);
    /// let mut token = Vec::new();
    /// envelope.mint_into(&id, b"step 2", MintOptions::new().at(now), &mut token)?;
    /// let opened = envelope.open(&id, &token, OpenOptions::new().at(now).buffer(Vec::with_capacity(256)))?;
    /// assert_eq!(opened.state.as_str(), Some("step 2"));
    /// # Ok::<(), stateseal::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Envelope::mint`]; `token` is then empty.
    pub fn mint_into(
        &self,
        identity: &RequestIdentity,
        state: impl AsRef<[u8]>,
        options: MintOptions<'_>,
        token: &mut Vec<u8>,
    ) -> Result<(), Error> {
        token.clear();
        let payload = self.payload(identity, state.as_ref(), &options)?;
        match self.codec.in_place() {
            Some(codec) => codec.seal_in_place(payload, token)?,
            None => token.extend_from_slice(self.codec.seal(&payload[SEAL_HEADROOM..])?.as_bytes()),
        }
        self.sealed(token, options.single_use)
            .inspect_err(|_| token.clear())
    }

    /// The round's claims and `state` (scanned once: plain, or checked as WTF-8), written after
    /// room for the codec's header.
    fn payload(
        &self,
        identity: &RequestIdentity,
        state: &[u8],
        options: &MintOptions<'_>,
    ) -> Result<Vec<u8>, Error> {
        // A plain state (printable ASCII) is UTF-8: the scan that finds it
        // plain, which the claims need anyway, spares the WTF-8 check.
        let plain = is_plain_ascii(state);
        if !plain && !is_wtf8(state) {
            return Err(Error::Data(DataError::Seal(
                "state is neither UTF-8 nor WTF-8",
            )));
        }
        let now = options.at.unwrap_or_else(|| self.clock.now()).as_secs_f64();
        let p_claim = options
            .principal
            .map(|p| principal::claim(p, &self.random))
            .transpose()?;
        let u_claim = options
            .single_use
            .then(|| single_use::SingleUseId::generate(&self.random).map(|id| id.encode()))
            .transpose()?;
        // The payload is written after room for the codec's header, so the built-in
        // codec encrypts it in place: no copy, and no plaintext copy left behind.
        Ok(claims::write_payload(
            &claims::MintClaims {
                iat: now,
                exp: now + self.ttl_secs,
                identity,
                state,
                state_plain: plain,
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
            return Err(Error::Data(DataError::Seal(
                "single-use states need a v2 key (a keyset key; `stateseal rotate` gives one): the Python SDK's codec opens v1 tokens and would not enforce single use",
            )));
        }
        if token.len() > self.max_token_len {
            // Every verifier would reject it: better an error now than a dead state.
            return Err(Error::Data(DataError::Seal(
                "state too large: its token exceeds max_token_len",
            )));
        }
        metrics::counter!("stateseal_seals_total").increment(1);
        Ok(())
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
