//! The CLI's error type and exit codes.

/// What went wrong, and which exit code says so: 1 means "no" (rejected,
/// refused, unhealthy), 2 means the command could not do its job.
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
    /// The command printed its answer, and the answer means this exit code
    /// (`status` and `check` exit 1 while unhealthy).
    #[error("exit status {0}")]
    Reported(i32),
}

impl CliError {
    /// The process exit code for this error.
    pub(crate) fn exit_code(&self) -> i32 {
        match self {
            Self::Rejected(_) => 1,
            Self::Usage(_) | Self::Failed(_) => 2,
            Self::Reported(code) => *code,
        }
    }
}

impl From<stateseal::Error> for CliError {
    fn from(e: stateseal::Error) -> Self {
        if let stateseal::Error::Provider(stateseal::ProviderError::Kms {
            provider,
            class,
            detail,
        }) = &e
        {
            return Self::Failed(kms_summary(provider, *class, detail));
        }
        if matches!(
            e,
            stateseal::Error::Keyset(stateseal::KeysetError::Refused { .. })
                | stateseal::Error::Keyset(stateseal::KeysetError::BehindNewest(_))
        ) {
            return Self::Rejected(e.to_string());
        }
        match e.reject_reason() {
            Some(r) => Self::Rejected(r.to_string()),
            None => Self::Failed(e.to_string()),
        }
    }
}

/// A KMS failure in one line: the provider, the class, the KMS's first line
/// (bounded), and what to check for that class.
pub(crate) fn kms_summary(provider: &str, class: stateseal::ErrorClass, detail: &str) -> String {
    use stateseal::ErrorClass;
    let first: String = detail
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(240)
        .collect();
    // A credential failure is "transient" to a server (it keeps serving cached
    // keys while credentials refresh); to an operator it means "set them up".
    if class == ErrorClass::Transient && detail.to_ascii_lowercase().contains("credential") {
        return format!(
            "{provider} KMS, credentials unavailable: {first}; check that this machine has credentials for {provider} (environment, profile or role, metadata server) and that they are current"
        );
    }
    let check = match class {
        ErrorClass::Transient => {
            "the network path to the KMS, its endpoint, and whether the credentials are current"
        }
        ErrorClass::Denied => {
            "the caller's permission to use the key (IAM / policy) and that the key is enabled"
        }
        ErrorClass::Invalid => {
            "that the keyset document is unaltered and the KEK URI is the one that wrapped the key"
        }
        ErrorClass::Config => "the provider's configuration: endpoint, region, credentials",
        _ => "the provider's documentation for this error",
    };
    format!("{provider} KMS, {class}: {first}; check {check}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kms_failures_are_one_bounded_line_with_what_to_check() {
        let sdk_dump = format!(
            "Decrypt: dispatch failure\n{}",
            "  caused by: io error\n".repeat(200)
        );
        let e =
            stateseal::provider::kms_error("aws-kms", stateseal::ErrorClass::Transient, sdk_dump);
        let text = CliError::from(e).to_string();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.len() < 400, "{} bytes", text.len());
        assert!(
            text.contains("transient") && text.contains("check the network path"),
            "{text}"
        );
        let e = stateseal::provider::kms_error(
            "gcp-kms",
            stateseal::ErrorClass::Transient,
            "Decrypt: credentials: cannot fetch a token (check Application Default Credentials)",
        );
        let text = CliError::from(e).to_string();
        assert!(
            text.contains("credentials unavailable") && !text.contains("transient"),
            "{text}"
        );
        let e = stateseal::provider::kms_error(
            "aws-kms",
            stateseal::ErrorClass::Denied,
            "Decrypt: AccessDeniedException: no",
        );
        assert!(CliError::from(e).to_string().contains("permission"));
    }
}
