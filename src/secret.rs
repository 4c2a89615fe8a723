//! Secret byte strings: zeroized on drop, redacted in `Debug`, never serializable.

use std::fmt;

use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::error::{DataError, Error};

/// The shortest secret a key ring accepts, in bytes (the Python SDK's floor too).
pub const MIN_SECRET_LEN: usize = 32;

/// Operator key material (the HKDF input keying material of one ring slot).
///
/// The bytes are wiped when the value is dropped, `Debug` prints `<redacted>`,
/// and the type implements neither `Display` nor `Serialize`, so a secret cannot
/// reach a log line or a wire format by accident.
///
/// ```
/// use stateseal::Secret;
///
/// let secret = Secret::new(vec![7u8; 32])?;
/// assert_eq!(format!("{secret:?}"), "Secret(<redacted>)");
/// assert!(Secret::new(vec![7u8; 31]).is_err());
/// # Ok::<(), stateseal::Error>(())
/// ```
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct Secret(Vec<u8>);

impl Secret {
    /// Wraps `bytes`, which must be at least [`MIN_SECRET_LEN`] bytes long.
    ///
    /// The input vector is moved in, so no unwiped copy is left behind.
    ///
    /// # Errors
    /// [`DataError::KeyTooShort`] when `bytes` is shorter than 32 bytes; the input
    /// is wiped before the error is returned.
    pub fn new(bytes: Vec<u8>) -> Result<Self, Error> {
        let secret = Self(bytes);
        if secret.0.len() < MIN_SECRET_LEN {
            return Err(Error::Data(DataError::KeyTooShort {
                index: 0,
                len: secret.0.len(),
            }));
        }
        Ok(secret)
    }

    /// Copies `bytes` into a new secret (the caller keeps and should wipe its own copy).
    ///
    /// # Errors
    /// [`DataError::KeyTooShort`] as for [`Secret::new`].
    pub fn from_slice(bytes: &[u8]) -> Result<Self, Error> {
        Self::new(bytes.to_vec())
    }

    /// The UTF-8 bytes of `text`: what the Python SDK does with a `str` key.
    ///
    /// # Errors
    /// [`DataError::KeyTooShort`] when the text is shorter than 32 bytes once encoded.
    pub fn from_text(text: &str) -> Result<Self, Error> {
        Self::from_slice(text.as_bytes())
    }

    /// Generates a fresh 32-byte secret from the operating system's CSPRNG.
    ///
    /// # Errors
    /// [`DataError::Random`] when the operating system cannot supply randomness.
    pub fn generate() -> Result<Self, Error> {
        let mut bytes = vec![0u8; MIN_SECRET_LEN];
        crate::random::fill_os(&mut bytes)?;
        Ok(Self(bytes))
    }

    /// The secret bytes. Keep the borrow short and never log it.
    pub fn expose(&self) -> &[u8] {
        &self.0
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Always false: a secret is never empty (kept for the `len` convention).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_short_and_redacts() {
        let err = Secret::new(vec![1; 31]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "request-state keys must be at least 32 bytes of secret randomness; keys[0] is 31 bytes"
        );
        let s = Secret::from_text("abcdefghijklmnopqrstuvwxyz0123456789").unwrap();
        assert_eq!(format!("{s:?}"), "Secret(<redacted>)");
        assert!(!format!("{s:?}").contains("abc"));
    }

    #[test]
    fn generate_is_random() {
        let a = Secret::generate().unwrap();
        let b = Secret::generate().unwrap();
        assert_eq!(a.len(), 32);
        assert_ne!(a.expose(), b.expose());
    }
}
