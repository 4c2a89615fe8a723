//! Where a store or a key lives, as a URI: its scheme picks the provider.
//!
//! The keyset's own checks (a MAC key's KEK) and the provider registry both read
//! schemes, so the parsing lives below both.

use crate::error::{Error, ProviderError};

/// The scheme of `uri` (`scheme://rest`), or an error that says what a URI looks like.
///
/// # Errors
/// [`ProviderError::InvalidUri`].
pub fn scheme_of(uri: &str) -> Result<&str, Error> {
    match uri.split_once("://") {
        Some((scheme, rest))
            if !scheme.is_empty()
                && !rest.is_empty()
                && scheme
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') =>
        {
            Ok(scheme)
        }
        _ => Err(Error::Provider(ProviderError::InvalidUri {
            uri: uri.to_owned(),
            problem: "expected <scheme>://<location>".into(),
        })),
    }
}
