//! The CLI's error type and exit codes.

/// What went wrong, and which exit code says so.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum CliError {
    /// The operation's answer is "no" (exit 1): e.g. a state was rejected.
    #[error("rejected: {0}")]
    Rejected(String),
    /// Usage or configuration error (exit 2); the message names what to fix.
    #[error("{0}")]
    Usage(String),
    /// Anything else that failed (exit 2).
    #[error("{0}")]
    Failed(String),
}

impl CliError {
    /// The process exit code for this error.
    pub(crate) fn exit_code(&self) -> i32 {
        match self {
            Self::Rejected(_) => 1,
            Self::Usage(_) | Self::Failed(_) => 2,
        }
    }
}

impl From<stateseal::Error> for CliError {
    fn from(e: stateseal::Error) -> Self {
        match e.reject_reason() {
            Some(r) => Self::Rejected(r.to_string()),
            None => Self::Failed(e.to_string()),
        }
    }
}
