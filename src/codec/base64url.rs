//! Strict base64url without padding: only the canonical encoding decodes.
//!
//! A lax decoder accepts several spellings of one byte string (non-zero
//! "don't care" bits in the last character, optional padding, stray
//! characters). Accepting only the canonical spelling keeps tokens
//! one-to-one with their bytes, as the Python SDK's decoder does.
//!
//! `base64-turbo` picks its AVX-512 VBMI or AVX2 kernel at run time (scalar
//! code elsewhere): 3-6x `base64-simd`'s AVX2 code from 1 KiB up on this
//! project's machines (docs/benchmarks.md). Its `unsafe` stays in that crate.

use base64_turbo::URL_SAFE_NO_PAD as STRICT;

/// Appends the unpadded base64url encoding of `bytes` to `out`.
pub(crate) fn encode_into(bytes: &[u8], out: &mut String) {
    // The crate returns its output as a `String` without re-checking it is
    // ASCII; writing into `out`'s own bytes would need that check (or `unsafe`),
    // which costs as much as this copy at 1 KiB and more above (docs/benchmarks.md).
    out.push_str(&STRICT.encode(bytes));
}

/// Appends the unpadded base64url encoding of `bytes` to `out`, written in place.
pub(crate) fn encode_bytes_into(bytes: &[u8], out: &mut Vec<u8>) {
    let at = out.len();
    out.resize(at + STRICT.encoded_len(bytes.len()), 0);
    // The slice is exactly the encoded length, so the encoder cannot run out of room.
    let written = STRICT.encode_slice(bytes, &mut out[at..]).unwrap_or(0);
    out.truncate(at + written);
}

/// The unpadded base64url encoding of `bytes`.
pub(crate) fn encode(bytes: &[u8]) -> String {
    STRICT.encode(bytes)
}

/// The unpadded base64url encoding of 16 bytes (22 characters), without allocating.
///
/// Scalar on purpose: for one digest per request a table lookup per character
/// is cheaper than entering a vector kernel.
pub(crate) fn encode_16(bytes: &[u8; 16]) -> [u8; 22] {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let char_of = |sextet: u32| ALPHABET[(sextet & 63) as usize];
    let mut out = [0u8; 22];
    // Five groups of three bytes make twenty characters.
    for (group, chars) in bytes.chunks_exact(3).zip(out.chunks_exact_mut(4)) {
        let n = u32::from(group[0]) << 16 | u32::from(group[1]) << 8 | u32::from(group[2]);
        chars.copy_from_slice(&[
            char_of(n >> 18),
            char_of(n >> 12),
            char_of(n >> 6),
            char_of(n),
        ]);
    }
    // The sixteenth byte: two characters, the last with four zero bits.
    let last = u32::from(bytes[15]);
    out[20] = char_of(last >> 2);
    out[21] = char_of(last << 4);
    out
}

/// Decodes canonical unpadded base64url; anything else is `None`.
///
/// The decoder is strict: it refuses padding, characters outside the
/// alphabet and non-zero trailing bits, in its vector kernels as in its
/// scalar one (the tests below pin that down at every length up to 300).
pub(crate) fn decode(text: &[u8]) -> Option<Vec<u8>> {
    STRICT.decode(text).ok()
}

/// [`decode`] into `out`, whose bytes (any length) are overwritten and grown
/// only if too few; `false` as `decode`'s `None`. A kept buffer is reused
/// without a second fill.
pub(crate) fn decode_into(text: &[u8], out: &mut Vec<u8>) -> bool {
    let room = STRICT.decoded_len_estimate(text.len());
    if out.len() < room {
        out.resize(room, 0);
    }
    match STRICT.decode_slice(text, out) {
        Ok(written) => {
            out.truncate(written);
            true
        }
        Err(_) => {
            out.clear();
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_only() {
        assert_eq!(decode(b"QQ").as_deref(), Some(&b"A"[..]));
        assert!(decode(b"QR").is_none(), "non-zero trailing bits");
        assert!(decode(b"QQ==").is_none(), "padding");
        assert!(decode(b"Q").is_none(), "impossible length");
        assert!(decode(b"Q+Q").is_none(), "standard alphabet");
        assert!(decode(b"Q Q").is_none(), "whitespace");
        assert_eq!(encode(&[0xfb, 0xff]), "-_8");
        assert_eq!(decode(b"").as_deref(), Some(&b""[..]));
        assert!(
            decode(b"QUJ").is_none(),
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
            assert_eq!(decode(encode(&bytes).as_bytes()), Some(bytes));
        }
    }

    /// Against an independent strict decoder (the `base64` crate) at every
    /// length up to 300, so the vector kernels (which start at 28 characters)
    /// are covered: every character of every encoding replaced by each of 256
    /// bytes near both ends and by a sample in between, plus truncations and
    /// appended padding, stray characters and whitespace.
    #[test]
    fn agrees_with_an_independent_strict_decoder() {
        use base64::Engine as _;
        let reference = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (mut checked, mut accepted) = (0usize, 0usize);
        for len in 0..300usize {
            let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            let text = encode(&bytes);
            assert_eq!(text, reference.encode(&bytes), "encoding of {len} bytes");
            let mut appended = text.clone();
            encode_into(&bytes, &mut appended);
            assert_eq!(appended, format!("{text}{text}"));
            let mut appended = text.clone().into_bytes();
            encode_bytes_into(&bytes, &mut appended);
            assert_eq!(appended, format!("{text}{text}").into_bytes());
            // A kept buffer, longer or shorter than the result, holding other bytes.
            let mut kept = vec![0xa5; (len * 7) % 500];
            assert_eq!(decode(text.as_bytes()).as_deref(), Some(&bytes[..]));
            let chars = text.as_bytes();
            let mut check = |candidate: &[u8]| {
                let ours = decode(candidate);
                assert_eq!(
                    ours,
                    reference.decode(candidate).ok(),
                    "{len} bytes: {candidate:?}"
                );
                // Into a kept buffer: the same answer, and nothing of a refused one left.
                // The bytes as they are, UTF-8 or not (a binding's token).
                let into = decode_into(candidate, &mut kept).then(|| kept.clone());
                assert_eq!(into, ours, "{len} bytes into a kept buffer: {candidate:?}");
                assert!(into.is_some() || kept.is_empty());
                checked += 1;
                accepted += usize::from(ours.is_some());
            };
            for pos in 0..chars.len() {
                let near_end = pos < 4 || pos + 4 >= chars.len();
                let values: Vec<u8> = if near_end {
                    (0..=255).collect()
                } else {
                    (0..8).map(|_| next() as u8).collect()
                };
                for v in values {
                    let mut m = chars.to_vec();
                    m[pos] = v;
                    check(&m);
                }
            }
            for cut in 1..chars.len().min(6) {
                check(&chars[..chars.len() - cut]);
            }
            for extra in ["=", "==", "A", "AA", "AAA", "\n", " ", "+", "/"] {
                check(&[chars, extra.as_bytes()].concat());
            }
        }
        // Both answers occur often, so neither side can pass by always saying one thing.
        assert!(checked > 500_000 && accepted > 50_000 && checked - accepted > 300_000);
    }
}
