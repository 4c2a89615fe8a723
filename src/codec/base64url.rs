//! Strict base64url without padding: only the canonical encoding decodes.
//!
//! A lax decoder accepts several spellings of one byte string (non-zero
//! "don't care" bits in the last character, optional padding, stray
//! characters). Accepting only the canonical spelling keeps tokens
//! one-to-one with their bytes, as the Python SDK's decoder does.

use base64::Engine;
use base64::alphabet::URL_SAFE;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

const STRICT: GeneralPurpose = GeneralPurpose::new(
    &URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::RequireNone)
        .with_decode_allow_trailing_bits(false),
);

/// Appends the unpadded base64url encoding of `bytes` to `out`.
pub(crate) fn encode_into(bytes: &[u8], out: &mut String) {
    STRICT.encode_string(bytes, out);
}

/// The unpadded base64url encoding of `bytes`.
pub(crate) fn encode(bytes: &[u8]) -> String {
    STRICT.encode(bytes)
}

/// Decodes canonical unpadded base64url; anything else is `None`.
pub(crate) fn decode(text: &str) -> Option<Vec<u8>> {
    STRICT.decode(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_only() {
        assert_eq!(decode("QQ").as_deref(), Some(&b"A"[..]));
        assert!(decode("QR").is_none(), "non-zero trailing bits");
        assert!(decode("QQ==").is_none(), "padding");
        assert!(decode("Q").is_none(), "impossible length");
        assert!(decode("Q+Q").is_none(), "standard alphabet");
        assert!(decode("Q Q").is_none(), "whitespace");
        assert_eq!(encode(&[0xfb, 0xff]), "-_8");
        assert_eq!(decode("").as_deref(), Some(&b""[..]));
    }
}
