//! The salted principal claim `p`.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::codec::{b64u_decode, b64u_encode};
use crate::error::Error;
pub use crate::principal::Principal;
use crate::random::RandomSource;

/// Label hashed in front of every principal digest.
pub const PRINCIPAL_LABEL: &[u8] = b"mcp/request-state/principal:";
const SALT_LEN: usize = 8;
const TAG_LEN: usize = 16;
/// Length of a `p` claim: the unpadded base64url of salt and tag.
pub(crate) const CLAIM_LEN: usize = ((SALT_LEN + TAG_LEN) * 4).div_ceil(3);

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
