//! What every provider crate does with a failed KMS call besides reading its
//! service's own codes: the class of a bare HTTP status, an upstream message
//! bounded before it goes into an error, and a transport error's causes on
//! one line. One home, so that the AWS, Cloud KMS and Vault providers class
//! and word the same failure the same way.

use super::{ErrorClass, kms_error};
use crate::error::Error;

/// The most characters of upstream text (a service's message, a transport
/// error's causes) a provider error carries.
pub const MAX_PROVIDER_TEXT: usize = 300;

impl ErrorClass {
    /// The class of an HTTP status that no service code explains: throttling
    /// (429) and server errors (5xx) pass, so they are transient; any other
    /// status says the request was wrong.
    ///
    /// ```
    /// use stateseal::provider::ErrorClass;
    /// assert_eq!(ErrorClass::of_http_status(503), ErrorClass::Transient);
    /// assert_eq!(ErrorClass::of_http_status(429), ErrorClass::Transient);
    /// assert_eq!(ErrorClass::of_http_status(400), ErrorClass::Invalid);
    /// ```
    pub fn of_http_status(status: u16) -> Self {
        if status == 429 || (500..=599).contains(&status) {
            Self::Transient
        } else {
            Self::Invalid
        }
    }
}

/// `text` cut to [`MAX_PROVIDER_TEXT`] characters (never inside one).
///
/// ```
/// use stateseal::provider::{MAX_PROVIDER_TEXT, bounded_text};
/// assert_eq!(bounded_text("key disabled"), "key disabled");
/// assert_eq!(bounded_text(&"é".repeat(400)).chars().count(), MAX_PROVIDER_TEXT);
/// ```
pub fn bounded_text(text: &str) -> String {
    text.chars().take(MAX_PROVIDER_TEXT).collect()
}

/// `e` and each error it was caused by, joined by `": "`, bounded like
/// [`bounded_text`]: what a connection failure says, on one line.
///
/// ```
/// use stateseal::provider::cause_chain;
/// let e = std::io::Error::other("connection refused");
/// assert_eq!(cause_chain(&e), "connection refused");
/// ```
pub fn cause_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        if text.chars().count() >= MAX_PROVIDER_TEXT {
            break;
        }
        text.push_str(": ");
        text.push_str(&cause.to_string());
        next = cause.source();
    }
    bounded_text(&text)
}

/// A [`ProviderError::Kms`](crate::ProviderError::Kms) of `class` for `provider` whose detail is
/// `"{op}: {text}"`, the upstream text bounded.
pub fn provider_failure(provider: &str, class: ErrorClass, op: &str, text: &str) -> Error {
    kms_error(provider, class, format!("{op}: {}", bounded_text(text)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ProviderError;

    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);

    impl std::fmt::Display for Layer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Layer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|l| l as _)
        }
    }

    #[test]
    fn statuses_causes_and_bounds() {
        for (status, class) in [
            (429, ErrorClass::Transient),
            (500, ErrorClass::Transient),
            (599, ErrorClass::Transient),
            (400, ErrorClass::Invalid),
            (404, ErrorClass::Invalid),
            (600, ErrorClass::Invalid),
        ] {
            assert_eq!(ErrorClass::of_http_status(status), class, "{status}");
        }
        let e = Layer(
            "request failed",
            Some(Box::new(Layer(
                "connect",
                Some(Box::new(Layer("connection refused", None))),
            ))),
        );
        assert_eq!(
            cause_chain(&e),
            "request failed: connect: connection refused"
        );
        let long = Layer(
            "x",
            Some(Box::new(Layer(
                Box::leak("y".repeat(1000).into_boxed_str()),
                None,
            ))),
        );
        assert_eq!(cause_chain(&long).chars().count(), MAX_PROVIDER_TEXT);
        match provider_failure("aws-kms", ErrorClass::Denied, "Decrypt", &"z".repeat(500)) {
            Error::Provider(ProviderError::Kms {
                provider,
                class,
                detail,
            }) => {
                assert_eq!((provider.as_str(), class), ("aws-kms", ErrorClass::Denied));
                assert_eq!(
                    detail,
                    format!("Decrypt: {}", "z".repeat(MAX_PROVIDER_TEXT))
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
