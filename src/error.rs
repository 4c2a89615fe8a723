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
    /// The key ring has not been loaded yet (the scheduler never completed a refresh):
    /// nothing is sealed, every echo is rejected.
    #[error("no key ring is loaded yet; the instance is not ready")]
    NotReady,
    /// The instance has had no usable keyset document for longer than its
    /// staleness bound: the fleet may have moved to a key it does not know,
    /// so it seals nothing new; states it sealed before still verify.
    #[error(
        "the keyset store has been unusable for longer than max_store_staleness: not sealing until it is back (states already sealed still verify)"
    )]
    SealingStopped,
    /// No key of the keyset can seal now (its unwraps failed, or every key has
    /// retired): nothing is sealed and every echo is rejected until a refresh
    /// succeeds. The message names the first failing entry and why.
    #[error("no key in the keyset can seal: {0}")]
    KeysUnavailable(String),
    /// A keyset document is invalid; the message names the field.
    #[error("keyset document: {field}: {problem}")]
    Keyset {
        /// The offending field (`keys[1].activate_at`, `format`, …).
        field: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A keyset document was read but not adopted (an older generation, another
    /// keyset id, a rewritten generation, invalid contents); the instance keeps
    /// serving on the last document it adopted.
    #[error("keyset document refused ({reason}): {detail}")]
    KeysetRefused {
        /// The `reason` label of `stateseal_keyset_rejected_total`.
        reason: &'static str,
        /// Generations and ids involved, and what to do.
        detail: String,
    },
    /// A URI names a scheme no provider or store is registered for.
    #[error("no provider or store is registered for scheme {scheme:?} (registered: {registered})")]
    UnknownScheme {
        /// The scheme that was asked for.
        scheme: String,
        /// The registered schemes, comma-separated.
        registered: String,
    },
    /// A KEK or store URI is malformed.
    #[error("invalid URI {uri:?}: {problem}")]
    InvalidUri {
        /// The URI (KEK and store URIs name keys and places, never key material).
        uri: String,
        /// What is wrong with it.
        problem: String,
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
    /// The primary key is a `v1.` keyset key and this process has made as
    /// many seals with it as its recorded seal reservation allows (plus one
    /// block once it holds one). A process that cannot write the keyset
    /// records nothing and seals nothing with a `v1.` keyset key. It seals
    /// again once a reservation lands or the next key is primary; `v2.` keys
    /// carry no budget (`stateseal rotate` makes one).
    #[error(
        "key {kid} has made the {limit} seals this process may make with it (its recorded seal reservation, plus one block once it holds one); writing the keyset reserves more, and `stateseal rotate` gives the keyset a v2 key, which carries no budget"
    )]
    SealBudgetExhausted {
        /// The key id (hex).
        kid: String,
        /// The seals this process was allowed.
        limit: u64,
    },
    /// A key store could not be read or written.
    #[error("keyset store {uri}: {problem}")]
    Store {
        /// The store URI.
        uri: String,
        /// What failed (an I/O error kind, a permission problem, …).
        problem: String,
    },
    /// A replay store could not record a single-use state.
    #[error("replay store {uri}: {problem}")]
    ReplayStore {
        /// The store URI (no credentials).
        uri: String,
        /// What failed (unreachable, refused, past its deadline).
        problem: String,
    },
    /// A KMS call failed.
    #[error("{provider} KMS: {class}: {detail}")]
    Kms {
        /// The provider's URI scheme (`aws-kms`, `local`, …).
        provider: String,
        /// How the caller should react.
        class: ErrorClass,
        /// What the KMS said (never key material).
        detail: String,
    },
    /// An echoed state failed verification; the reason code is for logs only.
    #[error("requestState rejected: {0}")]
    Rejected(RejectReason),
}

impl Error {
    /// The KMS error class, when this error came from a key provider.
    pub fn kms_class(&self) -> Option<ErrorClass> {
        match self {
            Self::Kms { class, .. } => Some(*class),
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

/// How a caller should react to a KMS failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorClass {
    /// Throttling, timeouts, 5xx, network: retry with backoff; keep serving cached keys.
    Transient,
    /// Access revoked, key disabled or deleted: drop the key once its cached unwrap expires.
    Denied,
    /// The ciphertext or its context is wrong: the entry can never unwrap.
    Invalid,
    /// The provider is misconfigured (bad URI, missing credentials).
    Config,
}

impl std::fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Transient => "transient",
            Self::Denied => "denied",
            Self::Invalid => "invalid",
            Self::Config => "configuration",
        })
    }
}
