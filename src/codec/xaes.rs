//! XAES-256-GCM (C2SP, <https://c2sp.org/XAES-256-GCM>): AES-256-GCM under a
//! per-message key derived from the input key and the first half of a 192-bit
//! random nonce by the NIST SP 800-108r1 counter KDF with CMAC-AES-256. With
//! 192 random bits per message, one key seals about 2^80 messages at a 2^-32
//! collision risk, instead of AES-256-GCM's 2^32 with random 96-bit nonces:
//! the basis of keys without a seal budget (v2 tokens).
//!
//! Built from aws-lc's AES-256 block function (ECB, both KDF blocks in one
//! call) and its AES-256-GCM under the derived key; the derived key bytes are
//! wiped after use. Setting up that per-message AES-256-GCM key (key schedule
//! and GHASH table) is what v2 costs over v1: about 0.2 µs per seal or open
//! here, the same with ring's AES-GCM, and more with RustCrypto's `aes-gcm`
//! (measured with `stateseal bench`, docs/benchmarks.md).

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use aws_lc_rs::cipher::{AES_256, EncryptingKey, EncryptionContext, UnboundCipherKey};
use zeroize::Zeroizing;

use crate::error::Error;

/// Nonce length: 192 bits.
pub(crate) const NONCE_LEN: usize = 24;
/// Tag length (AES-256-GCM's).
pub(crate) const TAG_LEN: usize = 16;

const BLOCK: usize = 16;
/// The KDF's label, the ASCII letter `X`.
const LABEL: u8 = 0x58;

/// An XAES-256-GCM key: the AES-256 block function under the input key and
/// the CMAC subkey K1 (steps 1 and 2 of the C2SP algorithm, done once).
pub(crate) struct XaesKey {
    block: EncryptingKey,
    k1: Zeroizing<[u8; BLOCK]>,
}

impl std::fmt::Debug for XaesKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("XaesKey(<redacted>)")
    }
}

fn unspecified(_: aws_lc_rs::error::Unspecified) -> Error {
    Error::Seal("XAES-256-GCM failed")
}

impl XaesKey {
    /// A key from 32 bytes.
    ///
    /// # Errors
    /// [`Error::Seal`] if aws-lc refuses the key (never for 32 bytes).
    pub(crate) fn new(key: &[u8; 32]) -> Result<Self, Error> {
        let block = EncryptingKey::ecb(UnboundCipherKey::new(&AES_256, key).map_err(unspecified)?)
            .map_err(unspecified)?;
        let mut l = Zeroizing::new([0u8; BLOCK]);
        block
            .less_safe_encrypt(&mut l[..], EncryptionContext::None)
            .map_err(unspecified)?;
        // K1 = L << 1, reduced by x^128 + x^7 + x^2 + x + 1 when L's top bit was set.
        let mut k1 = Zeroizing::new([0u8; BLOCK]);
        let carry = l[0] >> 7;
        for i in 0..BLOCK {
            let next = if i + 1 < BLOCK { l[i + 1] >> 7 } else { 0 };
            k1[i] = (l[i] << 1) | next;
        }
        k1[BLOCK - 1] ^= 0x87 * carry;
        Ok(Self { block, k1 })
    }

    /// The derived AES-256-GCM key for `nonce` (steps 3 to 5).
    fn derive_key(&self, nonce: &[u8; NONCE_LEN]) -> Result<Zeroizing<[u8; 2 * BLOCK]>, Error> {
        let mut kx = Zeroizing::new([0u8; 2 * BLOCK]);
        for (i, half) in kx.chunks_exact_mut(BLOCK).enumerate() {
            half[..4].copy_from_slice(&[0, i as u8 + 1, LABEL, 0]);
            half[4..].copy_from_slice(&nonce[..12]);
            for (b, k) in half.iter_mut().zip(self.k1.iter()) {
                *b ^= k;
            }
        }
        // Both blocks in one call: ECB encrypts each 16-byte block on its own.
        self.block
            .less_safe_encrypt(&mut kx[..], EncryptionContext::None)
            .map_err(unspecified)?;
        Ok(kx)
    }

    /// Encrypts `in_out` in place; the tag.
    ///
    /// # Errors
    /// [`Error::Seal`] if aws-lc fails.
    pub(crate) fn seal(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        in_out: &mut [u8],
    ) -> Result<[u8; TAG_LEN], Error> {
        let kx = self.derive_key(nonce)?;
        let tag = gcm_key(&kx)?
            .seal_in_place_separate_tag(gcm_nonce(nonce), Aad::from(aad), in_out)
            .map_err(unspecified)?;
        let mut out = [0u8; TAG_LEN];
        out.copy_from_slice(tag.as_ref());
        Ok(out)
    }

    /// Decrypts `in_out` (ciphertext and tag) in place; the plaintext's
    /// length. aws-lc checks the tag in constant time and leaves no plaintext
    /// behind when it fails.
    ///
    /// # Errors
    /// [`Error::Seal`] when the tag does not verify (or the AEAD fails).
    pub(crate) fn open(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        in_out: &mut [u8],
    ) -> Result<usize, Error> {
        let kx = self.derive_key(nonce)?;
        gcm_key(&kx)?
            .open_in_place(gcm_nonce(nonce), Aad::from(aad), in_out)
            .map(|p| p.len())
            .map_err(unspecified)
    }
}

fn gcm_key(kx: &[u8; 2 * BLOCK]) -> Result<LessSafeKey, Error> {
    UnboundKey::new(&AES_256_GCM, kx)
        .map(LessSafeKey::new)
        .map_err(unspecified)
}

/// The AES-256-GCM nonce: the second half of the XAES nonce.
fn gcm_nonce(nonce: &[u8; NONCE_LEN]) -> Nonce {
    let mut n = [0u8; 12];
    n.copy_from_slice(&nonce[12..]);
    Nonce::assume_unique_for_key(n)
}

#[cfg(test)]
mod tests {
    use sha3::Shake128;
    use sha3::digest::{ExtendableOutput, Update, XofReader};

    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        hex::decode(s).expect("hex")
    }

    /// Encrypts `in_out` in place and appends the tag (the vectors' layout).
    fn seal_appending(x: &XaesKey, nonce: &[u8; NONCE_LEN], aad: &[u8], in_out: &mut Vec<u8>) {
        let tag = x.seal(nonce, aad, in_out).expect("seal");
        in_out.extend_from_slice(&tag);
    }

    /// The specification's two vectors, intermediate values included (the
    /// second has L's top bit set, so K1 takes the reduction).
    #[test]
    fn the_specification_vectors() {
        for (key, l, k1, kx, aad, ciphertext) in [
            (
                [1u8; 32],
                "7298caa565031eadc6ce23d23ea66378",
                "e531954aca063d5b8d9c47a47d4cc6f0",
                "c8612c9ed53fe43e8e005b828a1631a0bbcb6ab2f46514ec4f439fcfd0fa969b",
                "",
                "ce546ef63c9cc60765923609b33a9a1974e96e52daf2fcf7075e2271",
            ),
            (
                [3u8; 32],
                "91c08762876dccf9ba204a33768fa5fe",
                "23810ec50edb99f374409466ed1f4b7b",
                "e9c621d4cdd9b11b00a6427ad7e559aeedd66b3857646677748f8ca796cb3fd8",
                "c2sp.org/XAES-256-GCM",
                "986ec1832593df5443a179437fd083bf3fdb41abd740a21f71eb769d",
            ),
        ] {
            let x = XaesKey::new(&key).expect("key");
            let mut zero = [0u8; BLOCK];
            x.block
                .less_safe_encrypt(&mut zero, EncryptionContext::None)
                .expect("block");
            assert_eq!(zero.to_vec(), hex(l), "L");
            assert_eq!(x.k1.to_vec(), hex(k1), "K1");
            let nonce: [u8; NONCE_LEN] = *b"ABCDEFGHIJKLMNOPQRSTUVWX";
            // Kx, through AES-256-GCM under it: the same ciphertext as the vector.
            let direct = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &hex(kx)).expect("kx"));
            let mut by_kx = b"XAES-256-GCM".to_vec();
            direct
                .seal_in_place_append_tag(
                    Nonce::assume_unique_for_key(*b"MNOPQRSTUVWX"),
                    Aad::from(aad.as_bytes()),
                    &mut by_kx,
                )
                .expect("seal");
            let mut sealed = b"XAES-256-GCM".to_vec();
            seal_appending(&x, &nonce, aad.as_bytes(), &mut sealed);
            assert_eq!(sealed, hex(ciphertext));
            assert_eq!(by_kx, sealed, "Kx");
            let n = x.open(&nonce, aad.as_bytes(), &mut sealed).expect("open");
            assert_eq!(&sealed[..n], b"XAES-256-GCM");
        }
    }

    /// The specification's accumulated randomized test: inputs from one
    /// SHAKE-128 stream, every ciphertext into another, 10 000 iterations.
    #[test]
    fn the_accumulated_vector() {
        let mut source = Shake128::default().finalize_xof();
        let mut first = [0u8; 16];
        source.read(&mut first);
        assert_eq!(first.to_vec(), hex("7f9c2ba4e88f827d616045507605853e"));
        let mut source = Shake128::default().finalize_xof();
        let mut sink = Shake128::default();
        for _ in 0..10_000 {
            let mut key = [0u8; 32];
            let mut nonce = [0u8; NONCE_LEN];
            let mut len = [0u8; 1];
            source.read(&mut key);
            source.read(&mut nonce);
            source.read(&mut len);
            let mut plaintext = vec![0u8; usize::from(len[0])];
            source.read(&mut plaintext);
            source.read(&mut len);
            let mut aad = vec![0u8; usize::from(len[0])];
            source.read(&mut aad);
            let x = XaesKey::new(&key).expect("key");
            let mut sealed = plaintext.clone();
            seal_appending(&x, &nonce, &aad, &mut sealed);
            sink.update(&sealed);
            let n = x.open(&nonce, &aad, &mut sealed).expect("open");
            assert_eq!(&sealed[..n], &plaintext[..]);
        }
        let mut got = [0u8; 32];
        sink.finalize_xof().read(&mut got);
        assert_eq!(
            got.to_vec(),
            hex("e6b9edf2df6cec60c8cbd864e2211b597fb69a529160cd040d56c0c210081939")
        );
    }

    #[test]
    fn a_changed_byte_anywhere_is_refused() {
        let x = XaesKey::new(&[7u8; 32]).expect("key");
        let nonce = [9u8; NONCE_LEN];
        let mut sealed = b"state".to_vec();
        seal_appending(&x, &nonce, b"aad", &mut sealed);
        for i in 0..sealed.len() {
            let mut t = sealed.clone();
            t[i] ^= 1;
            assert!(x.open(&nonce, b"aad", &mut t).is_err(), "byte {i}");
        }
        for i in 0..NONCE_LEN {
            let mut n = nonce;
            n[i] ^= 1;
            assert!(
                x.open(&n, b"aad", &mut sealed.clone()).is_err(),
                "nonce byte {i}"
            );
        }
        assert!(x.open(&nonce, b"aaD", &mut sealed.clone()).is_err());
        assert_eq!(format!("{x:?}"), "XaesKey(<redacted>)");
    }
}
