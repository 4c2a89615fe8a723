//! Verifying: an echoed token unsealed and its claims checked, before any handler runs.

use super::{Envelope, Principal, RequestIdentity, SingleUse, claims};
use crate::error::Error;
use crate::json::Text;
use crate::reason::RejectReason;

impl Envelope {
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
        let result = match self.check(identity, Echo::Text(token), principal, now) {
            Ok(mut c) if c.single_use.is_some() => {
                c.state.wipe();
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
        self.opened(self.check(identity, Echo::Text(token), principal, now))
    }

    /// [`Envelope::open_at`] of a token's bytes (as a binding has them: bytes
    /// that are not UTF-8 are malformed, and the built-in codec refuses any
    /// byte outside a token's ASCII alphabet), decoded into `buffer`, whose
    /// capacity is reused: for a binding that copies the state into its
    /// runtime's own string and then keeps the state's buffer for its next
    /// call (wiped first: it held the plaintext).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use stateseal::{AesGcmCodec, Envelope, KeyRing, RequestIdentity, RingHandle, Secret};
    ///
    /// let ring = Arc::new(RingHandle::new(KeyRing::from_secrets(&[Secret::generate()?])?));
    /// let envelope = Envelope::builder(Arc::new(AesGcmCodec::new(ring)), None).build()?;
    /// let id = RequestIdentity::from_json("tools/call", br#"{"name":"transfer"}"#)?;
    /// let token = envelope.mint_at(&id, b"step 2", None, 1.8e9)?;
    /// let (state, _) = envelope.open_into_at(&id, token.as_bytes(), None, 1.8e9, Vec::with_capacity(256))?;
    /// assert_eq!(state.as_str(), Some("step 2"));
    /// # Ok::<(), stateseal::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Envelope::verify`].
    pub fn open_into_at(
        &self,
        identity: &RequestIdentity,
        token: &[u8],
        principal: Option<&Principal>,
        now: f64,
        buffer: Vec<u8>,
    ) -> Result<(Text, Option<SingleUse>), Error> {
        self.opened(self.check(identity, Echo::Bytes(token, buffer), principal, now))
    }

    /// What `open` gives for a checked state.
    fn opened(
        &self,
        checked: Result<claims::Checked, Error>,
    ) -> Result<(Text, Option<SingleUse>), Error> {
        let checked = self.count(checked)?;
        let single_use = checked.single_use.map(|id| {
            SingleUse::new(
                &id,
                self.audience.as_deref(),
                (checked.iat, checked.exp),
                self.max_skew,
            )
        });
        Ok((checked.state, single_use))
    }

    /// Unseals and checks the claims; counts nothing.
    fn check(
        &self,
        identity: &RequestIdentity,
        echo: Echo<'_>,
        principal: Option<&Principal>,
        now: f64,
    ) -> Result<claims::Checked, Error> {
        // Refused before any decoding: the echo is attacker-controlled and unbounded.
        let result = if echo.len() > self.max_token_len {
            Err(Error::Rejected(RejectReason::Malformed))
        } else {
            match echo {
                Echo::Text(token) => self.codec.unseal_in_place(token),
                Echo::Bytes(token, buffer) => self.codec.unseal_in_place_into(token, buffer),
            }
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
            .and_then(|mut c| {
                if self
                    .codec
                    .revoked(c.iat, principal.map(Principal::as_bytes))
                {
                    c.state.wipe();
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

/// A token to check, as the caller has it: text, or a binding's bytes with
/// the buffer to decode them into.
enum Echo<'a> {
    Text(&'a str),
    Bytes(&'a [u8], Vec<u8>),
}

impl Echo<'_> {
    fn len(&self) -> usize {
        match self {
            Echo::Text(token) => token.len(),
            Echo::Bytes(token, _) => token.len(),
        }
    }
}
