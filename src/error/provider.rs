//! The errors of key providers (KMS), keyset stores and replay stores.

/// Why a key provider, a keyset store or a replay store failed.
///
/// ```
/// use stateseal::{Error, ErrorClass, ProviderError};
///
/// let e: Error = ProviderError::Kms {
///     provider: "aws-kms".into(),
///     class: ErrorClass::Transient,
///     detail: "throttled".into(),
/// }
/// .into();
/// assert_eq!(e.kms_class(), Some(ErrorClass::Transient));
/// assert_eq!(e.to_string(), "aws-kms KMS: transient: throttled");
/// ```
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProviderError {
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
}

impl ProviderError {
    /// The KMS error class, when a key provider failed.
    pub fn kms_class(&self) -> Option<ErrorClass> {
        match self {
            Self::Kms { class, .. } => Some(*class),
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
