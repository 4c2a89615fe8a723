//! The crate's errors, by layer: [`Error`] is what every fallible call
//! returns, and its variants say which layer refused: the echo itself
//! ([`Error::Rejected`]), the data plane ([`DataError`]), the key plane
//! ([`KeysetError`]), a key provider or store ([`ProviderError`]), or the
//! configuration ([`Error::Config`]).
//!
//! Messages name what to fix but never carry a token, key, plaintext state or
//! principal, so they are safe to log. Each layer's message is the whole
//! message: [`Error`] displays its layer's error unchanged.

mod data;
mod keyset;
mod provider;

pub use data::DataError;
pub use keyset::{KeysetError, KeysetRefusal};
pub use provider::{ErrorClass, ProviderError};

use crate::reason::RejectReason;

/// Everything that can go wrong in `stateseal`, by the layer that refused.
///
/// ```
/// use stateseal::{DataError, Error, RejectReason};
///
/// fn status(e: &Error) -> u16 {
///     match e {
///         // The client's echo failed verification: its own fault.
///         Error::Rejected(_) => 400,
///         // The instance has no key to seal with yet: try another one.
///         Error::Data(DataError::NotReady | DataError::SealingStopped) => 503,
///         _ => 500,
///     }
/// }
/// assert_eq!(status(&Error::Rejected(RejectReason::Expired)), 400);
/// assert_eq!(status(&DataError::NotReady.into()), 503);
/// assert_eq!(DataError::NotReady.to_string(), Error::from(DataError::NotReady).to_string());
/// ```
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// An echoed state failed verification; the reason code is for logs only.
    #[error("requestState rejected: {0}")]
    Rejected(RejectReason),
    /// The data plane refused: a ring, a TTL or request params are invalid,
    /// or no key can seal now.
    #[error(transparent)]
    Data(#[from] DataError),
    /// The key plane refused: a keyset document, a write or a rotation.
    #[error(transparent)]
    Keyset(#[from] KeysetError),
    /// A key provider (KMS), a keyset store or a replay store failed.
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// A configuration value is invalid; the message names the field.
    #[error("invalid configuration: {0}")]
    Config(String),
}

impl Error {
    /// The KMS error class, when this error came from a key provider.
    pub fn kms_class(&self) -> Option<ErrorClass> {
        match self {
            Self::Provider(p) => p.kms_class(),
            _ => None,
        }
    }

    /// The rejection reason, when this error is a verification failure.
    pub fn reject_reason(&self) -> Option<RejectReason> {
        match self {
            Self::Rejected(r) => Some(*r),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each layer's message is the whole message: wrapping adds nothing.
    #[test]
    fn a_layer_error_displays_unchanged_through_error() {
        let layered: [(Error, &str); 4] = [
            (
                DataError::KeyTooShort { index: 1, len: 16 }.into(),
                "request-state keys must be at least 32 bytes of secret randomness; keys[1] is 16 bytes",
            ),
            (
                KeysetError::Conflict {
                    expected: Some(3),
                    found: Some(4),
                }
                .into(),
                "keyset changed concurrently: expected generation Some(3), found Some(4); reload and retry",
            ),
            (
                ProviderError::Kms {
                    provider: "local".into(),
                    class: ErrorClass::Denied,
                    detail: "key disabled".into(),
                }
                .into(),
                "local KMS: denied: key disabled",
            ),
            (
                Error::Config("ttl: must be positive".into()),
                "invalid configuration: ttl: must be positive",
            ),
        ];
        for (error, message) in layered {
            assert_eq!(error.to_string(), message);
        }
    }

    #[test]
    fn the_class_and_the_reason_come_from_their_layers() {
        let kms: Error = ProviderError::Kms {
            provider: "aws-kms".into(),
            class: ErrorClass::Transient,
            detail: "throttled".into(),
        }
        .into();
        assert_eq!(kms.kms_class(), Some(ErrorClass::Transient));
        assert_eq!(kms.reject_reason(), None);
        let store: Error = ProviderError::Store {
            uri: "file:///k".into(),
            problem: "gone".into(),
        }
        .into();
        assert_eq!(store.kms_class(), None);
        let rejected = Error::Rejected(RejectReason::Expired);
        assert_eq!(rejected.reject_reason(), Some(RejectReason::Expired));
        assert_eq!(rejected.kms_class(), None);
    }

    #[test]
    fn errors_are_send_sync_and_static() {
        fn check<T: Send + Sync + 'static + std::error::Error>() {}
        check::<Error>();
        check::<DataError>();
        check::<KeysetError>();
        check::<ProviderError>();
    }
}
