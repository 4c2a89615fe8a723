//! Key derivation (HKDF-SHA256) and key ids, exactly as the Python SDK's v1 codec.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use aws_lc_rs::aead::{AES_256_GCM, LessSafeKey, UnboundKey};
use hkdf::Hkdf;
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use crate::secret::Secret;

/// HKDF `info` for the AES-256-GCM key.
pub const KDF_INFO: &[u8] = b"mcp/request-state/v1/aes-256-gcm";
/// Prefix hashed with the derived key to make the key id.
pub const KID_INFO: &[u8] = b"mcp/request-state/v1/kid:";
/// Key id length in bytes.
pub const KID_LEN: usize = 4;

/// A 4-byte, non-secret key fingerprint carried in every token.
///
/// ```
/// use stateseal::{KeyId, Secret};
/// let kid = KeyId::of(&Secret::new(b"0123456789abcdef0123456789abcdef".to_vec())?);
/// assert_eq!(kid.to_string(), "a014f40b");
/// # Ok::<(), stateseal::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyId(pub(crate) [u8; KID_LEN]);

impl KeyId {
    /// The key id of `secret`: SHA-256(`KID_INFO` ‖ HKDF(secret))[..4].
    pub fn of(secret: &Secret) -> Self {
        kid_of(&derive_key(secret))
    }

    /// The id's bytes, as a token carries them.
    pub fn to_bytes(self) -> [u8; KID_LEN] {
        self.0
    }

    /// The id as lowercase hex.
    pub fn to_hex(self) -> String {
        self.to_string()
    }

    /// Parses the 8-hex-digit form ([`KeyId::to_hex`]); `None` for anything else.
    ///
    /// ```
    /// use stateseal::KeyId;
    /// assert_eq!(KeyId::from_hex("a014f40b").unwrap().to_hex(), "a014f40b");
    /// assert!(KeyId::from_hex("a014f40").is_none());
    /// assert!(KeyId::from_hex("A014F40B").is_none());
    /// ```
    pub fn from_hex(text: &str) -> Option<Self> {
        let digits = text.as_bytes();
        // One spelling: lowercase, as written.
        if digits.len() != 2 * KID_LEN
            || !digits
                .iter()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        {
            return None;
        }
        let mut id = [0u8; KID_LEN];
        for (byte, pair) in id.iter_mut().zip(digits.chunks_exact(2)) {
            let pair = std::str::from_utf8(pair).ok()?;
            *byte = u8::from_str_radix(pair, 16).ok()?;
        }
        Some(Self(id))
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyId({self})")
    }
}

/// HKDF-SHA256(ikm = secret, salt = none, info = [`KDF_INFO`], 32 bytes).
pub(crate) fn derive_key(secret: &Secret) -> Zeroizing<[u8; 32]> {
    let hk = Hkdf::<Sha256>::new(None, secret.expose());
    let mut okm = Zeroizing::new([0u8; 32]);
    // 32 bytes is far below HKDF-SHA256's 255 * 32 limit, so expand cannot fail.
    if hk.expand(KDF_INFO, okm.as_mut()).is_err() {
        unreachable!("HKDF-SHA256 expand of 32 bytes cannot fail");
    }
    okm
}

fn kid_of(key: &[u8; 32]) -> KeyId {
    let digest = Sha256::new()
        .chain_update(KID_INFO)
        .chain_update(key)
        .finalize();
    let mut kid = [0u8; KID_LEN];
    kid.copy_from_slice(&digest[..KID_LEN]);
    KeyId(kid)
}

/// One prepared ring slot: the key id, the expanded AES-256-GCM cipher, and a
/// seal counter (AES-GCM with random nonces is safe up to 2^32 seals per key).
///
/// The cipher is ring's AES-256-GCM, chosen over the `aes-gcm` crate by
/// measurement (about 3x faster here, see the README). Our copies of the
/// secret and the derived key are wiped; ring does not wipe its expanded key
/// schedule on drop, which is ring's documented policy.
pub struct RingKey {
    kid: KeyId,
    cipher: LessSafeKey,
    seals: AtomicU64,
}

impl RingKey {
    /// Derives the AES key from `secret` and prepares the cipher.
    pub fn new(secret: &Secret) -> Self {
        let key = derive_key(secret);
        let kid = kid_of(&key);
        let cipher = match UnboundKey::new(&AES_256_GCM, key.as_ref()) {
            Ok(k) => LessSafeKey::new(k),
            Err(_) => unreachable!("a 32-byte key is always a valid AES-256 key"),
        };
        Self {
            kid,
            cipher,
            seals: AtomicU64::new(0),
        }
    }

    /// This key's id.
    pub fn kid(&self) -> KeyId {
        self.kid
    }

    /// How many tokens this key has sealed in this process.
    pub fn seal_count(&self) -> u64 {
        self.seals.load(Ordering::Relaxed)
    }

    pub(crate) fn cipher(&self) -> &LessSafeKey {
        &self.cipher
    }

    pub(crate) fn count_seal(&self) {
        self.seals.fetch_add(1, Ordering::Relaxed);
    }
}

impl fmt::Debug for RingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RingKey")
            .field("kid", &self.kid)
            .field("cipher", &"<redacted>")
            .field("seals", &self.seal_count())
            .finish()
    }
}

/// The derived AES key of `secret` (the `deterministic-testing` feature only,
/// to check the Python SDK's HKDF vectors).
#[cfg(feature = "deterministic-testing")]
pub fn derived_key(secret: &Secret) -> Zeroizing<[u8; 32]> {
    derive_key(secret)
}
