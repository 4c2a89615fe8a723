//! Revocations for bindings whose SDK checks the claims itself (Python): the
//! codec reads `iat` only while a live revocation could cover a state, and the
//! boundary asks, with the caller's principal, once the SDK's checks passed.

use stateseal::{Error, RejectReason, UnixTime};

use crate::Running;

impl Running {
    /// `payload`'s `iat` when a live revocation in the ring may cover it
    /// (`None`: none can, the common case, decided without parsing anything).
    ///
    /// Fail closed: while revocations are live, an `iat` that is not a finite
    /// number (`NaN`, `Infinity`, `-Infinity`, `1e400`: the SDK's JSON reads
    /// them, and its own checks accept them) is malformed, as a missing one
    /// is, rather than a state no revocation could cover.
    ///
    /// # Errors
    /// `malformed` for claims without a finite numeric `iat`.
    pub fn revocation_candidate(&self, payload: &[u8]) -> Result<Option<UnixTime>, Error> {
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
    pub fn revoked(&self, iat: UnixTime, principal: Option<&[u8]>) -> bool {
        // The ring loaded now, not the one that unsealed: a newer list only
        // knows more. A ring without revocations revokes nothing (its list
        // is not asked: a default list's bounds are not "none").
        self.codec.ring().current().is_some_and(|ring| {
            let list = ring.revocations();
            !list.is_empty() && list.covers(iat, principal)
        })
    }
}
