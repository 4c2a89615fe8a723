//! The crate's one error type.

use crate::reason::RejectReason;

/// Everything that can go wrong in `stateseal`.
///
/// Messages name what to fix but never carry a token, key, plaintext state or
/// principal, so they are safe to log.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A key ring needs at least one key.
    #[error("a key ring requires at least one key")]
    EmptyRing,
    /// A ring key is shorter than 32 bytes.
    #[error(
        "request-state keys must be at least 32 bytes of secret randomness; keys[{index}] is {len} bytes"
    )]
    KeyTooShort {
        /// Position of the key in the ring as given.
        index: usize,
        /// Its length in bytes.
        len: usize,
    },
    /// Two ring keys derive the same key id (the same secret given twice).
    #[error("keys[{index}] duplicates an earlier ring key")]
    DuplicateKey {
        /// Position of the second occurrence.
        index: usize,
    },
    /// The operating system could not supply randomness; nothing was sealed.
    #[error("the operating system's random number generator failed")]
    Random,
    /// The TTL is not a positive finite number of seconds.
    #[error("request-state ttl must be a positive finite number of seconds")]
    InvalidTtl,
    /// A configuration value is invalid; the message names the field.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The request's params are not valid JSON (the offset says where).
    #[error("request params are not valid JSON (byte {offset})")]
    InvalidJson {
        /// Byte offset of the first error.
        offset: usize,
    },
    /// The request's params are not an object, or name their target with an array or object.
    #[error("request params must be an object whose name/uri is a string, number, boolean or null")]
    UnsupportedParams,
    /// Sealing failed (a custom codec or the ring refused); nothing was sent.
    #[error("sealing requestState failed: {0}")]
    Seal(&'static str),
    /// An echoed state failed verification; the reason code is for logs only.
    #[error("requestState rejected: {0}")]
    Rejected(RejectReason),
}

impl Error {
    /// The rejection reason, when this error is a verification failure.
    pub fn reject_reason(&self) -> Option<RejectReason> {
        match self {
            Self::Rejected(r) => Some(*r),
            _ => None,
        }
    }
}
