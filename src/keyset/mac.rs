//! The keyset document's MAC: HMAC-SHA256 under a key only KEK holders can unwrap.
//!
//! The tag covers a domain label, the format tag and the payload's exact bytes
//! as stored. It never covers a re-encoding of parsed values: many spellings
//! (of a time, a number, an escaped string) parse to the same value, and a tag
//! over the parsed form would let a store writer pick any of them.

use aws_lc_rs::hmac;
use hkdf::Hkdf;
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::error::Error;
use crate::secret::Secret;

/// Length of a tag (HMAC-SHA256).
pub(crate) const TAG_LEN: usize = 32;

/// Domain label in front of every tagged message.
const TAG_LABEL: &[u8] = b"stateseal/keyset-mac/v1\0";

/// HKDF label deriving the HMAC key from the unwrapped MAC key: the bytes the
/// KMS returns serve as nothing but this derivation's input.
const KDF_INFO: &[u8] = b"stateseal/keyset-mac/v1/hmac-sha256";

/// The purpose a MAC key's wrap is bound to, in place of an entry id (data-key
/// entry ids all start with `k_`, so no data key's wrap context equals it).
pub const MAC_PURPOSE: &str = "keyset-mac";

/// A keyset's MAC key, ready to tag and verify. Redacted in `Debug`; the
/// derived key lives in aws-lc's HMAC context, which cleanses it when dropped.
pub struct MacKey {
    key: hmac::Key,
}

impl std::fmt::Debug for MacKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MacKey(<redacted>)")
    }
}

impl MacKey {
    /// The MAC key from the secret a KMS unwrapped (a [`Secret`] is at least 32 bytes).
    ///
    /// # Errors
    /// [`Error::Config`] if HKDF refuses the output length (it cannot for 32 bytes).
    pub fn from_secret(secret: &Secret) -> Result<Self, Error> {
        let mut okm = Zeroizing::new([0u8; 32]);
        Hkdf::<Sha256>::new(None, secret.expose())
            .expand(KDF_INFO, okm.as_mut())
            .map_err(|_| Error::Config("HKDF output length".into()))?;
        Ok(Self {
            key: hmac::Key::new(hmac::HMAC_SHA256, okm.as_ref()),
        })
    }

    /// The tag of `payload` under format `format`.
    pub fn tag(&self, format: &str, payload: &[u8]) -> [u8; TAG_LEN] {
        let mut ctx = hmac::Context::with_key(&self.key);
        ctx.update(TAG_LABEL);
        ctx.update(format.as_bytes());
        ctx.update(b"\0");
        ctx.update(payload);
        let mut out = [0u8; TAG_LEN];
        out.copy_from_slice(ctx.sign().as_ref());
        out
    }

    /// Whether `tag` is the tag of `payload` (constant time).
    pub fn verify(&self, format: &str, payload: &[u8], tag: &[u8]) -> bool {
        let mut message = Vec::with_capacity(TAG_LABEL.len() + format.len() + 1 + payload.len());
        message.extend_from_slice(TAG_LABEL);
        message.extend_from_slice(format.as_bytes());
        message.push(0);
        message.extend_from_slice(payload);
        hmac::verify(&self.key, &message, tag).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> MacKey {
        MacKey::from_secret(&Secret::new(vec![byte; 32]).unwrap()).unwrap()
    }

    #[test]
    fn tags_bind_key_format_and_every_payload_byte() {
        let k = key(1);
        let tag = k.tag("stateseal.keyset/v2", b"{\"a\":1}");
        assert!(k.verify("stateseal.keyset/v2", b"{\"a\":1}", &tag));
        assert!(!key(2).verify("stateseal.keyset/v2", b"{\"a\":1}", &tag));
        assert!(!k.verify("stateseal.keyset/v3", b"{\"a\":1}", &tag));
        assert!(!k.verify("stateseal.keyset/v2", b"{\"a\": 1}", &tag));
        assert!(!k.verify("stateseal.keyset/v2", b"{\"a\":1}", &tag[..31]));
        let mut bent = tag;
        bent[31] ^= 1;
        assert!(!k.verify("stateseal.keyset/v2", b"{\"a\":1}", &bent));
        // The format/payload boundary is unambiguous.
        assert_ne!(k.tag("ab", b"c"), k.tag("a", b"bc"));
    }

    #[test]
    fn debug_is_redacted() {
        assert_eq!(format!("{:?}", key(7)), "MacKey(<redacted>)");
    }
}
