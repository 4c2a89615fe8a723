//! Revocations for bindings whose SDK checks the claims itself (Python): the
//! codec reads `iat` only while a live revocation could cover a state, and the
//! boundary asks, with the caller's principal, once the SDK's checks passed.

use stateseal::{Error, RejectReason, StateCodec};

use crate::Running;

impl Running {
    /// `payload`'s `iat` when a live revocation in the ring may cover it
    /// (`None`: none can, the common case, decided without parsing anything).
    ///
    /// # Errors
    /// `malformed` for claims without a numeric `iat`.
    pub fn revocation_candidate(&self, payload: &[u8]) -> Result<Option<f64>, Error> {
        let Some(ring) = self.codec.ring().current() else {
            return Ok(None);
        };
        if ring.revocations().is_empty() {
            return Ok(None);
        }
        // As the SDK reads its own claims (WTF-8): a lone surrogate in the
        // state is no reason to refuse it.
        let iat = stateseal::SdkPayload::parse(payload)
            .ok()
            .and_then(|claims| claims.issued_at())
            .ok_or(Error::Rejected(RejectReason::Malformed))?;
        Ok(ring.revocations().may_cover(iat).then_some(iat))
    }

    /// Whether a state issued at `iat`, presented by `principal` (its bytes),
    /// is revoked by the ring loaded now.
    pub fn revoked(&self, iat: f64, principal: Option<&[u8]>) -> bool {
        self.codec.revoked(iat, principal)
    }
}
