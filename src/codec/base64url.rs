//! Strict base64url without padding: only the canonical encoding decodes.
//!
//! A lax decoder accepts several spellings of one byte string (non-zero
//! "don't care" bits in the last character, optional padding, stray
//! characters). Accepting only the canonical spelling keeps tokens
//! one-to-one with their bytes, as the Python SDK's decoder does.

use base64_simd::{AsOut, URL_SAFE_NO_PAD as STRICT};

/// Appends the unpadded base64url encoding of `bytes` to `out`.
pub(crate) fn encode_into(bytes: &[u8], out: &mut String) {
    STRICT.encode_append(bytes, out);
}

/// The unpadded base64url encoding of `bytes`.
pub(crate) fn encode(bytes: &[u8]) -> String {
    STRICT.encode_to_string(bytes)
}

/// The unpadded base64url encoding of 16 bytes (22 characters), without allocating.
pub(crate) fn encode_16(bytes: &[u8; 16]) -> [u8; 22] {
    let mut out = [0u8; 22];
    // 16 bytes encode to exactly 22 characters, so the output always fits.
    let _ = STRICT.encode(bytes, out.as_mut_slice().as_out());
    out
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
        for seed in 0u8..=255 {
            let bytes: [u8; 16] = std::array::from_fn(|i| {
                seed.wrapping_mul(31)
                    .wrapping_add((i as u8).wrapping_mul(97))
            });
            assert_eq!(&encode_16(&bytes)[..], encode(&bytes).as_bytes());
        }
        for len in 0..64 {
            let bytes: Vec<u8> = (0..len as u8).map(|b| b.wrapping_mul(37)).collect();
            assert_eq!(decode(&encode(&bytes)), Some(bytes));
        }
    }
}
