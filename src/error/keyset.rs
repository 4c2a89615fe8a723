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
        /// Why; its [`KeysetRefusal::label`] is the `reason` label of
        /// `stateseal_keyset_rejected_total`.
        reason: KeysetRefusal,
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

/// Why a document was not adopted; also the `reason` label of
/// `stateseal_keyset_rejected_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum KeysetRefusal {
    /// The store held bytes that are not a valid keyset document.
    Invalid,
    /// Two entries unwrap to the same key id.
    DuplicateKey,
    /// A lower generation than the one already adopted.
    Rollback,
    /// The same generation with different contents (a write that bypassed compare-and-swap).
    Rewritten,
    /// Another keyset id than the one already adopted.
    OtherKeyset,
    /// The document's timing profile allows shorter-lived states than this
    /// instance seals: its rotations would retire keys under live states.
    Timing,
    /// An unauthenticated (`stateseal.keyset/v1`) document, not accepted by configuration.
    Unauthenticated,
    /// The MAC tag does not verify, or the MAC key does not unwrap for this keyset.
    Mac,
    /// A KEK (a data key's or the MAC key's) the configuration does not pin.
    UnpinnedKek,
    /// A generation below the configured `min_generation`.
    BelowMinimum,
    /// Past the document's `expires_at`.
    Expired,
    /// An entry's key id changed.
    KeyChanged,
    /// An entry activates later than the adopted document said.
    ActivationDelayed,
    /// An entry activates further ahead than any legitimate rotation schedules.
    ActivationTooFar,
    /// An entry retires later than the adopted document said (or no longer retires).
    RetirementDelayed,
    /// An entry's seal reservations went down.
    ReservationsDecreased,
    /// An entry this instance saw pruned is back.
    PrunedReturned,
    /// A revocation entry that can still cover a valid state is gone.
    RevocationDropped,
    /// At first adoption: a lower generation than the store's newest copy
    /// (a restored backup, seen by an instance with no watermark).
    BehindNewest,
}

impl KeysetRefusal {
    /// The `reason` label: `mac`, `rollback`, `expired`, …
    pub fn label(self) -> &'static str {
        match self {
            Self::Invalid => "invalid",
            Self::DuplicateKey => "duplicate_key",
            Self::Rollback => "rollback",
            Self::Rewritten => "rewritten",
            Self::OtherKeyset => "other_keyset",
            Self::Timing => "timing",
            Self::Unauthenticated => "unauthenticated",
            Self::Mac => "mac",
            Self::UnpinnedKek => "unpinned_kek",
            Self::BelowMinimum => "below_min_generation",
            Self::Expired => "expired",
            Self::KeyChanged => "key_changed",
            Self::ActivationDelayed => "activation_delayed",
            Self::ActivationTooFar => "activation_too_far",
            Self::RetirementDelayed => "retirement_delayed",
            Self::ReservationsDecreased => "reservations_decreased",
            Self::PrunedReturned => "pruned_returned",
            Self::RevocationDropped => "revocation_dropped",
            Self::BehindNewest => "behind_newest",
        }
    }
}

impl std::fmt::Display for KeysetRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}
