//! The salted principal claim `p`.

use std::fmt;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::codec::{b64u_decode, b64u_encode};
use crate::error::Error;
use crate::json::{Text, push_wtf8};
use crate::random::RandomSource;

/// Label hashed in front of every principal digest.
pub const PRINCIPAL_LABEL: &[u8] = b"mcp/request-state/principal:";
const SALT_LEN: usize = 8;
const TAG_LEN: usize = 16;
/// Length of a `p` claim: the unpadded base64url of salt and tag.
pub(crate) const CLAIM_LEN: usize = ((SALT_LEN + TAG_LEN) * 4).div_ceil(3);

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

fn tag(salt: &[u8], principal: &Principal) -> [u8; TAG_LEN] {
    let h = Sha256::new()
        .chain_update(PRINCIPAL_LABEL)
        .chain_update(salt)
        .chain_update(principal.as_bytes())
        .finalize();
    let mut t = [0u8; TAG_LEN];
    t.copy_from_slice(&h[..TAG_LEN]);
    t
}

/// `b64url(salt ‖ SHA-256(label ‖ salt ‖ principal)[..16])` with a fresh 8-byte salt.
pub(crate) fn claim(principal: &Principal, random: &RandomSource) -> Result<String, Error> {
    let mut raw = [0u8; SALT_LEN + TAG_LEN];
    random.fill(&mut raw[..SALT_LEN])?;
    let t = tag(&raw[..SALT_LEN], principal);
    raw[SALT_LEN..].copy_from_slice(&t);
    Ok(b64u_encode(&raw))
}

/// Whether `claim` was minted for `principal` (constant-time on the tag).
pub(crate) fn matches(claim: &str, principal: &Principal) -> bool {
    let Some(raw) = b64u_decode(claim.as_bytes()) else {
        return false;
    };
    if raw.len() != SALT_LEN + TAG_LEN {
        return false;
    }
    let expected = tag(&raw[..SALT_LEN], principal);
    raw[SALT_LEN..].ct_eq(&expected).into()
}
