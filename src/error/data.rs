//! The data plane's errors: the ring, the codec and the boundary.

/// Why the data plane refused: a ring, a TTL or request params are invalid,
/// sealing failed, or no key can seal now.
///
/// ```
/// use stateseal::{DataError, Error};
///
/// let e: Error = DataError::EmptyRing.into();
/// assert!(matches!(e, Error::Data(DataError::EmptyRing)));
/// assert_eq!(e.to_string(), "a key ring requires at least one key");
/// ```
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DataError {
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
}
