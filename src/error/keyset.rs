//! The key plane's errors: keyset documents, their writes and rotations.

/// Why the key plane refused a keyset document, a write or a rotation.
///
/// ```
/// use stateseal::{Error, KeysetError};
///
/// // A lost compare-and-swap race is the one a writer retries.
/// fn retry(e: &Error) -> bool {
///     matches!(e, Error::Keyset(KeysetError::Conflict { .. }))
/// }
/// assert!(retry(&KeysetError::Conflict { expected: Some(1), found: Some(2) }.into()));
/// ```
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeysetError {
    /// A keyset document is invalid; the message names the field.
    #[error("keyset document: {field}: {problem}")]
    Invalid {
        /// The offending field (`keys[1].activate_at`, `format`, …).
        field: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A keyset document was read but not adopted (an older generation, another
    /// keyset id, a rewritten generation, invalid contents); the instance keeps
    /// serving on the last document it adopted.
    #[error("keyset document refused ({reason}): {detail}")]
    Refused {
        /// The `reason` label of `stateseal_keyset_rejected_total`.
        reason: &'static str,
        /// Generations and ids involved, and what to do.
        detail: String,
    },
    /// A keyset write lost a compare-and-swap race: someone else wrote first.
    #[error(
        "keyset changed concurrently: expected generation {expected:?}, found {found:?}; reload and retry"
    )]
    Conflict {
        /// The generation this writer based its change on.
        expected: Option<u64>,
        /// The generation found in the store.
        found: Option<u64>,
    },
    /// A rotation is already in flight; wait for it to finish or force.
    #[error("a rotation is already in flight ({0}); wait until it completes, or force it")]
    RotationInFlight(String),
    /// A rotation was refused before anything was written: a live key does not
    /// unwrap with the KEK at hand, the new key does not round-trip through its
    /// wrap, or the ring would grow past its limit. The message names which.
    #[error("rotation refused, nothing was written: {0}")]
    RotationRefused(String),
    /// An operator's keyset write (a rotation, renewal or upgrade) was refused
    /// before anything was written because the running fleet would refuse
    /// its result: it is built on a restored backup the fleet has moved past
    /// (see `KeysetStore::newest_copy`). The message names the generations,
    /// the fleet's reason and the ways out.
    #[error("keyset write refused, nothing was written: {0}")]
    BehindNewest(String),
}
