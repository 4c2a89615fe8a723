//! Key derivation (HKDF-SHA256) and key ids: for `v1.` tokens exactly as the
//! Python SDK's codec, for `v2.` tokens the same construction under their own
//! labels, so that no raw key ever serves both formats.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use hkdf::Hkdf;
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use crate::cipher::TAG_LEN;
use crate::cipher::aead::{AeadBackend, GcmKey};
use crate::cipher::xaes::{NONCE_LEN as XAES_NONCE_LEN, XaesKey};
use crate::error::{DataError, Error};
use crate::random::RandomSource;
use crate::secret::Secret;

/// HKDF `info` for the AES-256-GCM key.
pub const KDF_INFO: &[u8] = b"mcp/request-state/v1/aes-256-gcm";
/// Prefix hashed with the derived key to make the key id.
pub const KID_INFO: &[u8] = b"mcp/request-state/v1/kid:";
/// HKDF `info` for the XAES-256-GCM key of `v2.` tokens.
pub const KDF_INFO_V2: &[u8] = b"mcp/request-state/v2/xaes-256-gcm";
/// Prefix hashed with the derived `v2.` key to make its key id.
pub const KID_INFO_V2: &[u8] = b"mcp/request-state/v2/kid:";
/// Key id length in bytes.
pub const KID_LEN: usize = 4;

/// The token format a key seals and opens; a key serves exactly one.
///
/// ```
/// use stateseal::TokenFormat;
/// assert_eq!(TokenFormat::V2.prefix(), "v2.");
/// assert_eq!(TokenFormat::from_prefix("v1."), Some(TokenFormat::V1));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
#[non_exhaustive]
pub enum TokenFormat {
    /// `v1.`: AES-256-GCM with 96-bit random nonces, byte-compatible with the
    /// Python SDK's codec. A key may seal at most 2^32 times (NIST SP
    /// 800-38D): keyset keys carry a seal budget; static keys are not counted.
    V1,
    /// `v2.`: XAES-256-GCM (C2SP) with 192-bit random nonces, the derived key
    /// shared by a thread's batch of 256 seals: 2^57 seals per key at a 2^-32
    /// collision risk, so no budget.
    V2,
}

impl TokenFormat {
    /// The prefix tokens of this format start with (also bound as associated data).
    pub fn prefix(self) -> &'static str {
        match self {
            Self::V1 => "v1.",
            Self::V2 => "v2.",
        }
    }

    /// The format a token prefix names.
    pub fn from_prefix(prefix: &str) -> Option<Self> {
        match prefix {
            "v1." => Some(Self::V1),
            "v2." => Some(Self::V2),
            _ => None,
        }
    }

    /// Nonce length in bytes.
    pub fn nonce_len(self) -> usize {
        match self {
            Self::V1 => 12,
            Self::V2 => 24,
        }
    }

    fn labels(self) -> (&'static [u8], &'static [u8]) {
        match self {
            Self::V1 => (KDF_INFO, KID_INFO),
            Self::V2 => (KDF_INFO_V2, KID_INFO_V2),
        }
    }
}

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
    /// The `v1.` key id of `secret`: SHA-256(`KID_INFO` ‖ HKDF(secret))[..4].
    pub fn of(secret: &Secret) -> Self {
        Self::of_format(secret, TokenFormat::V1)
    }

    /// The key id of `secret` as a key of `format` (its own HKDF and id labels).
    ///
    /// ```
    /// use stateseal::{KeyId, Secret, TokenFormat};
    /// let secret = Secret::new(vec![7; 32])?;
    /// assert_ne!(KeyId::of_format(&secret, TokenFormat::V2), KeyId::of(&secret));
    /// # Ok::<(), stateseal::Error>(())
    /// ```
    pub fn of_format(secret: &Secret, format: TokenFormat) -> Self {
        let (kdf, kid) = format.labels();
        kid_of(&derive(secret, kdf), kid)
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

/// HKDF-SHA256(ikm = secret, salt = none, info, 32 bytes).
fn derive(secret: &Secret, info: &[u8]) -> Zeroizing<[u8; 32]> {
    let hk = Hkdf::<Sha256>::new(None, secret.expose());
    let mut okm = Zeroizing::new([0u8; 32]);
    // 32 bytes is far below HKDF-SHA256's 255 * 32 limit, so expand cannot fail.
    if hk.expand(info, okm.as_mut()).is_err() {
        unreachable!("HKDF-SHA256 expand of 32 bytes cannot fail");
    }
    okm
}

fn kid_of(key: &[u8; 32], label: &[u8]) -> KeyId {
    let digest = Sha256::new()
        .chain_update(label)
        .chain_update(key)
        .finalize();
    let mut kid = [0u8; KID_LEN];
    kid.copy_from_slice(&digest[..KID_LEN]);
    KeyId(kid)
}

/// A prepared key's cipher: one per format, never both for one key (GCM's
/// hash key AES_K(0) is XAES's L, so one raw key under both would void both).
enum Cipher {
    Gcm(GcmKey),
    Xaes(Box<XaesKey>),
}

/// One prepared ring slot: the key id, its format and cipher, a seal counter,
/// and the seal budget the process may not pass (`v1.` keyset keys; see
/// `rotation::reservations`).
///
/// `v1.` keys use AES-256-GCM, `v2.` keys XAES-256-GCM built on it, from the
/// process's [`AeadBackend`] (aws-lc or ring; same bytes either way). Our
/// copies of the secret and the derived key are wiped; aws-lc cleanses its
/// key schedules when they are dropped, ring's hold no heap copies.
pub struct RingKey {
    kid: KeyId,
    format: TokenFormat,
    cipher: Cipher,
    seals: AtomicU64,
    seal_limit: AtomicU64,
}

impl RingKey {
    /// A `v1.` key: derives the AES key from `secret` and prepares the cipher.
    pub fn new(secret: &Secret) -> Self {
        Self::with_format(secret, TokenFormat::V1)
    }

    /// A key of `format`, derived from `secret` under that format's labels.
    ///
    /// ```
    /// use stateseal::{KeyId, RingKey, Secret, TokenFormat};
    /// let secret = Secret::new(vec![7; 32])?;
    /// let key = RingKey::with_format(&secret, TokenFormat::V2);
    /// assert_eq!(key.kid(), KeyId::of_format(&secret, TokenFormat::V2));
    /// # Ok::<(), stateseal::Error>(())
    /// ```
    pub fn with_format(secret: &Secret, format: TokenFormat) -> Self {
        Self::with_backend(secret, format, AeadBackend::selected())
    }

    /// A key of `format` whose AES-256-GCM runs on `backend` rather than the
    /// process's choice (to compare backends; tokens are the same bytes).
    ///
    /// ```
    /// use stateseal::{AeadBackend, RingKey, Secret, TokenFormat};
    /// let secret = Secret::new(vec![7; 32])?;
    /// let key = RingKey::with_backend(&secret, TokenFormat::V1, AeadBackend::Ring);
    /// assert_eq!(key.backend(), AeadBackend::Ring);
    /// # Ok::<(), stateseal::Error>(())
    /// ```
    pub fn with_backend(secret: &Secret, format: TokenFormat, backend: AeadBackend) -> Self {
        let (kdf, label) = format.labels();
        let key = derive(secret, kdf);
        let kid = kid_of(&key, label);
        let cipher = match format {
            TokenFormat::V1 => match GcmKey::new(backend, &key) {
                Ok(k) => Cipher::Gcm(k),
                Err(_) => unreachable!("a 32-byte key is always a valid AES-256 key"),
            },
            TokenFormat::V2 => match XaesKey::new(&key, backend) {
                Ok(k) => Cipher::Xaes(Box::new(k)),
                Err(_) => unreachable!("a 32-byte key is always a valid XAES-256-GCM key"),
            },
        };
        Self {
            kid,
            format,
            cipher,
            seals: AtomicU64::new(0),
            seal_limit: AtomicU64::new(u64::MAX),
        }
    }

    /// The AES-256-GCM implementation this key seals and opens with.
    pub fn backend(&self) -> AeadBackend {
        match &self.cipher {
            Cipher::Gcm(k) => k.backend(),
            Cipher::Xaes(k) => k.backend(),
        }
    }

    /// This key's id.
    pub fn kid(&self) -> KeyId {
        self.kid
    }

    /// The token format this key seals.
    pub fn format(&self) -> TokenFormat {
        self.format
    }

    /// How many tokens this key has sealed in this process.
    pub fn seal_count(&self) -> u64 {
        self.seals.load(Ordering::Relaxed)
    }

    /// How many seals this process may make with the key (`None`: no budget).
    pub fn seal_limit(&self) -> Option<u64> {
        Some(self.seal_limit.load(Ordering::Relaxed)).filter(|l| *l != u64::MAX)
    }

    /// Sets the seal budget (the scheduler's, from this process's reservations).
    #[cfg(any(feature = "keys", test))]
    pub(crate) fn set_seal_limit(&self, limit: u64) {
        self.seal_limit.store(limit, Ordering::Relaxed);
    }

    /// Takes one seal from the budget, before sealing.
    ///
    /// # Errors
    /// [`DataError::SealBudgetExhausted`] once the process has made its limit.
    pub(crate) fn take_seal(&self) -> Result<(), Error> {
        let limit = self.seal_limit.load(Ordering::Relaxed);
        let taken = self
            .seals
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < limit).then_some(n + 1)
            });
        taken.map(|_| ()).map_err(|_| {
            Error::Data(DataError::SealBudgetExhausted {
                kid: self.kid.to_hex(),
                limit,
            })
        })
    }

    /// Draws a nonce into `nonce` (this format's length) and encrypts
    /// `in_out` in place under it; the tag. `v1.` draws all 96 bits per seal;
    /// `v2.` a fresh second half per seal and a first half per batch
    /// (`codec::xaes`).
    pub(crate) fn seal_in_place(
        &self,
        random: &RandomSource,
        nonce: &mut [u8],
        aad: &[u8],
        in_out: &mut [u8],
    ) -> Result<[u8; TAG_LEN], Error> {
        match &self.cipher {
            Cipher::Gcm(k) => {
                let n: &mut [u8; 12] = nonce
                    .try_into()
                    .map_err(|_| Error::Data(DataError::Seal("nonce length")))?;
                random.fill(n)?;
                k.seal(*n, aad, in_out)
            }
            Cipher::Xaes(k) => {
                let n: &mut [u8; XAES_NONCE_LEN] = nonce
                    .try_into()
                    .map_err(|_| Error::Data(DataError::Seal("nonce length")))?;
                k.seal_fresh(random, n, aad, in_out)
            }
        }
    }

    /// Decrypts `in_out` (ciphertext ‖ tag) in place; the plaintext's length,
    /// or `None` when the tag does not verify (checked in constant time).
    pub(crate) fn open_in_place(
        &self,
        nonce: &[u8],
        aad: &[u8],
        in_out: &mut [u8],
    ) -> Option<usize> {
        match &self.cipher {
            Cipher::Gcm(k) => k.open(nonce.try_into().ok()?, aad, in_out),
            Cipher::Xaes(k) => k.open(nonce.try_into().ok()?, aad, in_out).ok(),
        }
    }
}

impl fmt::Debug for RingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RingKey")
            .field("kid", &self.kid)
            .field("format", &self.format)
            .field("backend", &self.backend())
            .field("cipher", &"<redacted>")
            .field("seals", &self.seal_count())
            .field("seal_limit", &self.seal_limit())
            .finish()
    }
}

/// The derived AES key of `secret` (the `deterministic-testing` feature only,
/// to check the Python SDK's HKDF vectors).
#[cfg(feature = "deterministic-testing")]
pub fn derived_key(secret: &Secret) -> Zeroizing<[u8; 32]> {
    derive(secret, KDF_INFO)
}
