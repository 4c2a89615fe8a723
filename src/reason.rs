//! Log-only reason codes for a rejected echo.

use std::fmt;

/// Why an echoed `requestState` was rejected.
///
/// The wire answer is always the same frozen `-32602`; this code goes to the
/// server log only. The strings match the Python SDK's log reasons where both
/// reject, so mixed fleets read the same in one log pipeline.
///
/// ```
/// use stateseal::RejectReason;
/// assert_eq!(RejectReason::Expired.as_str(), "expired");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RejectReason {
    /// Not a `v1.` token, not canonical base64url, too short, or undecodable claims.
    Malformed,
    /// The token's key id is not in the ring (foreign or retired key).
    UnknownKey,
    /// The AES-GCM tag did not verify (tampered or wrong key).
    Seal,
    /// The echoed value is not a JSON string.
    NonStringState,
    /// `iat` is more than the allowed skew in the future (or not a number).
    MintedInFuture,
    /// `now >= exp` (or `exp` is not a number).
    Expired,
    /// Method, target or arguments differ from the round that minted the state.
    RequestBinding,
    /// The audience claim differs from this server's audience.
    Audience,
    /// A principal is bound on one side only.
    PrincipalDrift,
    /// The principal claim does not match the caller.
    Principal,
    /// The principal source failed; the state is denied.
    PrincipalBindingError,
    /// A custom codec failed in an unexpected way.
    CodecError,
    /// The state is valid but holds text a Rust handler cannot receive (a lone surrogate).
    UnrepresentableState,
    /// A single-use state was presented again (its id is already in the replay store).
    Replayed,
    /// A single-use state could not be recorded: no replay store, or the store
    /// failed or missed its deadline (single-use states fail closed).
    ReplayStoreUnavailable,
    /// The state is valid but a revocation in the keyset covers it.
    Revoked,
    /// A single-use state issued before the replay store's epoch: the store
    /// may have lost a record of it (it restarted empty, was flushed or failed over).
    BeforeReplayEpoch,
    /// A state of a round this verifier treats as single-use carries no
    /// single-use claim (minted by an instance without the setting, or before it).
    MissingSingleUseClaim,
}

impl RejectReason {
    /// The short, stable reason code.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Malformed => "malformed",
            Self::UnknownKey => "unknown key",
            Self::Seal => "seal",
            Self::NonStringState => "non-string requestState",
            Self::MintedInFuture => "minted in the future",
            Self::Expired => "expired",
            Self::RequestBinding => "request binding",
            Self::Audience => "audience",
            Self::PrincipalDrift => "principal drift",
            Self::Principal => "principal",
            Self::PrincipalBindingError => "principal binding error",
            Self::CodecError => "codec error",
            Self::UnrepresentableState => "unrepresentable state",
            Self::Replayed => "replayed",
            Self::ReplayStoreUnavailable => "replay store unavailable",
            Self::Revoked => "revoked",
            Self::BeforeReplayEpoch => "issued before the replay store's epoch",
            Self::MissingSingleUseClaim => "single-use claim missing",
        }
    }
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
