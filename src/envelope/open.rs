//! Opening: an echoed token unsealed and its claims checked, before any handler runs.

use super::{Envelope, OpenOptions, Opened, Principal, RequestIdentity, SingleUse, claims};
use crate::error::Error;
use crate::reason::RejectReason;

impl Envelope {
    /// Verifies an echoed `token` for the round `identity`, as `options`
    /// say, and returns the state it carries. A token is text; as bytes (a
    /// binding's), bytes outside a token's ASCII alphabet are malformed.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use stateseal::{Envelope, Error, KeyRing, MintOptions, OpenOptions, Principal, RejectReason, RequestIdentity, RingHandle, Secret};
    ///
    /// let ring = Arc::new(RingHandle::new(KeyRing::from_secrets(&[Secret::generate()?])?));
    /// let envelope = Envelope::builder(ring, Some("bank")).build()?;
    /// let id = RequestIdentity::from_json("tools/call", br#"{"name":"transfer"}"#)?;
    /// let (alice, mallory) = (Principal::new("alice"), Principal::new("mallory"));
    /// let token = envelope.mint(&id, "step 2", MintOptions::new().principal(&alice))?;
    /// let opened = envelope.open(&id, &token, OpenOptions::new().principal(&alice))?;
    /// assert_eq!(opened.state.as_str(), Some("step 2"));
    /// let refused = envelope.open(&id, &token, OpenOptions::new().principal(&mallory)).unwrap_err();
    /// assert_eq!(refused, Error::Rejected(RejectReason::Principal));
    /// # Ok::<(), stateseal::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Rejected`] with a log-only [`RejectReason`]; a single-use
    /// state is refused with [`RejectReason::ReplayStoreUnavailable`] unless
    /// [`OpenOptions::records_single_use`] says the caller records it.
    pub fn open(
        &self,
        identity: &RequestIdentity,
        token: impl AsRef<[u8]>,
        options: OpenOptions<'_>,
    ) -> Result<Opened, Error> {
        let now = options.at.unwrap_or_else(|| self.clock.now()).as_secs_f64();
        let checked = self.check(
            identity,
            token.as_ref(),
            options.buffer,
            options.principal,
            now,
        );
        let opened = match checked {
            Ok(mut c) if c.single_use.is_some() && !options.records_single_use => {
                c.state.wipe();
                Err(Error::Rejected(RejectReason::ReplayStoreUnavailable))
            }
            Ok(mut c) => match c.single_use {
                None => Ok(Opened {
                    state: c.state,
                    single_use: None,
                }),
                Some(id) => match SingleUse::new(
                    &id,
                    self.audience.as_deref(),
                    (c.iat, c.exp),
                    self.max_skew,
                ) {
                    Some(record) => Ok(Opened {
                        state: c.state,
                        single_use: Some(record),
                    }),
                    None => {
                        c.state.wipe();
                        Err(Error::Rejected(RejectReason::Malformed))
                    }
                },
            },
            Err(e) => Err(e),
        };
        self.count(opened)
    }

    /// Unseals and checks the claims; counts nothing.
    fn check(
        &self,
        identity: &RequestIdentity,
        token: &[u8],
        buffer: Vec<u8>,
        principal: Option<&Principal>,
        now: f64,
    ) -> Result<claims::Checked, Error> {
        // Refused before any decoding: the echo is attacker-controlled and unbounded.
        let result = if token.len() > self.max_token_len {
            Err(Error::Rejected(RejectReason::Malformed))
        } else {
            match self.codec.in_place() {
                Some(codec) => codec.unseal_in_place(token, buffer),
                None => std::str::from_utf8(token)
                    .map_err(|_| Error::Rejected(RejectReason::Malformed))
                    .and_then(|token| self.codec.unseal(token))
                    .map(|payload| {
                        let len = payload.len();
                        (payload, 0..len)
                    }),
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
                    self.max_skew_secs,
                )
            })
            // Last: only a state that passed every other check is looked up.
            .and_then(|mut c| {
                if self.revoked(c.iat, principal) {
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
