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
