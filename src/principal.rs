//! Who a state is bound to: the principal, as the envelope binds it and a
//! revocation entry names it (both build on this file, neither owns it).

use std::fmt;

use crate::json::{Text, push_wtf8};

/// Who a state is bound to: an opaque string, compared only as a salted hash.
///
/// `Debug` never prints it. Build it from an authenticated identity with
/// [`Principal::from_components`], which renders `[client_id, issuer, subject]`
/// exactly as the Python SDK does.
///
/// ```
/// use stateseal::Principal;
/// let p = Principal::from_components("client-123", Some("https://as.example"), Some("alice"));
/// assert_eq!(format!("{p:?}"), "Principal(<redacted>)");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Principal(Text);

impl Principal {
    /// A principal from its string form.
    pub fn new(text: impl Into<Text>) -> Self {
        Self(text.into())
    }

    /// `json.dumps([client_id, issuer, subject], separators=(",", ":"))`, as the Python SDK binds
    /// an authenticated caller; missing components are `null`.
    pub fn from_components(client_id: &str, issuer: Option<&str>, subject: Option<&str>) -> Self {
        let mut s = vec![b'['];
        push_wtf8(client_id.as_bytes(), &mut s);
        for part in [issuer, subject] {
            s.push(b',');
            match part {
                Some(v) => push_wtf8(v.as_bytes(), &mut s),
                None => s.extend_from_slice(b"null"),
            }
        }
        s.push(b']');
        // json.dumps with ensure_ascii writes ASCII only.
        Self(Text::from(String::from_utf8(s).unwrap_or_default()))
    }

    /// The principal's bytes (UTF-8, or WTF-8 with a lone surrogate).
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Principal(<redacted>)")
    }
}
