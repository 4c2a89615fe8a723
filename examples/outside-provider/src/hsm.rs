//! An in-memory HSM: what the provider talks to in place of a real HSM or
//! cloud KMS. Named AES-256-GCM keys that never leave it, encrypt and decrypt
//! with associated data, and switches for the failures a real one has.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use aws_lc_rs::rand::{SecureRandom, SystemRandom};

/// Why the HSM refused a call: the codes a provider has to classify.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HsmError {
    /// The HSM cannot be reached.
    Unavailable,
    /// The caller's session token expired.
    TokenExpired,
    /// The key is disabled (an operator withdrew it).
    KeyDisabled,
    /// No key has that name.
    NoSuchKey,
    /// The ciphertext, or its associated data, is not what the key sealed.
    BadCiphertext,
}

impl fmt::Display for HsmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Unavailable => "HSM unavailable",
            Self::TokenExpired => "session token expired",
            Self::KeyDisabled => "key disabled",
            Self::NoSuchKey => "no such key",
            Self::BadCiphertext => "decryption failed: ciphertext or associated data mismatch",
        })
    }
}

struct Key {
    aead: LessSafeKey,
    enabled: bool,
}

/// The HSM. Keys are created inside it and only ever used through
/// [`Hsm::encrypt`] and [`Hsm::decrypt`].
pub struct Hsm {
    keys: Mutex<HashMap<String, Key>>,
    available: AtomicBool,
    token_valid: AtomicBool,
    random: SystemRandom,
}

impl fmt::Debug for Hsm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        f.debug_struct("Hsm")
            .field("keys", &keys.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Default for Hsm {
    fn default() -> Self {
        Self::new()
    }
}

impl Hsm {
    /// An HSM with no keys, reachable, the caller's token valid.
    pub fn new() -> Self {
        Self {
            keys: Mutex::new(HashMap::new()),
            available: AtomicBool::new(true),
            token_valid: AtomicBool::new(true),
            random: SystemRandom::new(),
        }
    }

    /// Creates (or replaces) the AES-256 key `name` from fresh randomness.
    ///
    /// # Panics
    /// When the system's random number generator fails.
    pub fn create_key(&self, name: &str) {
        let mut bytes = zeroize::Zeroizing::new([0u8; 32]);
        self.random.fill(bytes.as_mut()).expect("randomness");
        let aead = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, bytes.as_ref()).expect("key"));
        let key = Key {
            aead,
            enabled: true,
        };
        self.lock().insert(name.to_owned(), key);
    }

    /// Makes the HSM reachable or not.
    pub fn set_available(&self, on: bool) {
        self.available.store(on, Ordering::SeqCst);
    }

    /// Makes the caller's token valid or expired.
    pub fn set_token_valid(&self, on: bool) {
        self.token_valid.store(on, Ordering::SeqCst);
    }

    /// Enables or disables the key `name` (no effect when there is none).
    pub fn set_enabled(&self, name: &str, on: bool) {
        if let Some(key) = self.lock().get_mut(name) {
            key.enabled = on;
        }
    }

    /// AES-256-GCM under key `name` with `aad`: a random nonce, then the
    /// ciphertext and its tag.
    ///
    /// # Errors
    /// Every [`HsmError`] but `BadCiphertext`.
    pub fn encrypt(&self, name: &str, plaintext: &[u8], aad: &[u8]) -> Result<Vec<u8>, HsmError> {
        let mut nonce = [0u8; NONCE_LEN];
        self.random
            .fill(&mut nonce)
            .map_err(|_| HsmError::Unavailable)?;
        let mut out = nonce.to_vec();
        let mut sealed = plaintext.to_vec();
        self.with_key(name, |key| {
            key.seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad),
                &mut sealed,
            )
            .map_err(|_| HsmError::Unavailable)
        })?;
        out.extend_from_slice(&sealed);
        Ok(out)
    }

    /// The plaintext of `ciphertext` under key `name`, if `aad` is the
    /// associated data it was encrypted with.
    ///
    /// # Errors
    /// Any [`HsmError`].
    pub fn decrypt(
        &self,
        name: &str,
        ciphertext: &[u8],
        aad: &[u8],
    ) -> Result<zeroize::Zeroizing<Vec<u8>>, HsmError> {
        let (nonce, sealed) = ciphertext
            .split_at_checked(NONCE_LEN)
            .ok_or(HsmError::BadCiphertext)?;
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| HsmError::BadCiphertext)?;
        let mut buffer = zeroize::Zeroizing::new(sealed.to_vec());
        let len = self.with_key(name, |key| {
            key.open_in_place(nonce, Aad::from(aad), &mut buffer)
                .map(|plaintext| plaintext.len())
                .map_err(|_| HsmError::BadCiphertext)
        })?;
        buffer.truncate(len);
        Ok(buffer)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Key>> {
        self.keys.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` with key `name` once the HSM, the token and the key allow it.
    fn with_key<T>(
        &self,
        name: &str,
        f: impl FnOnce(&LessSafeKey) -> Result<T, HsmError>,
    ) -> Result<T, HsmError> {
        if !self.available.load(Ordering::SeqCst) {
            return Err(HsmError::Unavailable);
        }
        if !self.token_valid.load(Ordering::SeqCst) {
            return Err(HsmError::TokenExpired);
        }
        let keys = self.lock();
        let key = keys.get(name).ok_or(HsmError::NoSuchKey)?;
        if !key.enabled {
            return Err(HsmError::KeyDisabled);
        }
        f(&key.aead)
    }
}
