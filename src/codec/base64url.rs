//! Strict base64url without padding: only the canonical encoding decodes.
//!
//! A lax decoder accepts several spellings of one byte string (non-zero
//! "don't care" bits in the last character, optional padding, stray
//! characters). Accepting only the canonical spelling keeps tokens
//! one-to-one with their bytes, as the Python SDK's decoder does.

use base64_simd::URL_SAFE_NO_PAD as STRICT;

/// Appends the unpadded base64url encoding of `bytes` to `out`.
pub(crate) fn encode_into(bytes: &[u8], out: &mut String) {
    STRICT.encode_append(bytes, out);
}

/// The unpadded base64url encoding of `bytes`.
pub(crate) fn encode(bytes: &[u8]) -> String {
    STRICT.encode_to_string(bytes)
}

/// Decodes canonical unpadded base64url; anything else is `None`.
///
/// base64-simd's decoder is strict: it refuses padding, characters outside
/// the alphabet and non-zero trailing bits (the tests below pin that down).
pub(crate) fn decode(text: &str) -> Option<Vec<u8>> {
    STRICT.decode_to_vec(text).ok()
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
        assert!(
            decode("QUJ").is_none(),
            "non-zero trailing bits, 3-char tail"
        );
        for len in 0..64 {
            let bytes: Vec<u8> = (0..len as u8).map(|b| b.wrapping_mul(37)).collect();
            assert_eq!(decode(&encode(&bytes)), Some(bytes));
        }
    }
}
