//! Token codecs: the `v1.` AES-256-GCM format (the Python SDK's), the `v2.`
//! XAES-256-GCM format (keyset keys), and the trait for bringing your own.
//!
//! Threat model: the token travels through the client, which may be hostile.
//! It may replay, truncate, re-encode, splice or forge tokens, and knows every
//! public parameter (format, key ids, claims layout). It does not know ring
//! secrets. The codec must therefore (1) authenticate every byte it returns,
//! including the format prefix and key id (they are the GCM associated data,
//! so a token cannot move to another format version or ring slot); (2) accept
//! one spelling per token (strict base64url); (3) fail closed and identically
//! whatever is wrong, with the reason kept for the server log; and (4) never
//! reuse a nonce: `v1.` draws 96 random bits per token and counts seals per
//! key so rotation happens long before the 2^32 bound; `v2.` (XAES-256-GCM)
//! draws a 192-bit nonce whose first half (the key derivation's input) is
//! shared by a batch of 256 seals: 2^57 seals per key at a 2^-32 risk.
//! Replay within the TTL is not the codec's job: the claims envelope binds a
//! token to its request, audience, principal and expiry.

mod base64url;
mod builtin;
mod scratch;

use std::ops::Range;

use crate::error::Error;
use crate::key::KID_LEN;

pub(crate) use base64url::{
    decode as b64u_decode, encode as b64u_encode, encode_16 as b64u_encode_16,
};
pub use builtin::{AesGcmCodec, token_key_id};
pub(crate) use scratch::payload_buffer;

/// The format prefix of v1 tokens (also bound as associated data).
pub const TOKEN_PREFIX: &str = "v1.";
/// Nonce length of v1 tokens in bytes.
pub const NONCE_LEN: usize = 12;
pub use crate::cipher::TAG_LEN;
/// Length of a prefix (`v1.`, `v2.`).
const PREFIX_LEN: usize = 3;
/// The longest header the built-in codec writes: a key id and a v2 nonce.
const MAX_HEADER: usize = KID_LEN + crate::cipher::xaes::NONCE_LEN;
/// Bytes free at the front of the buffer [`StateCodec::seal_with_headroom`] receives
/// (room for the built-in codec's key id and its longest nonce).
pub const SEAL_HEADROOM: usize = MAX_HEADER;

/// Authenticated encryption of the claims envelope, like the Python SDK's `RequestStateCodec`.
///
/// Requirements: `unseal(seal(p)) == p`; `unseal` fails with
/// [`Error::Rejected`] for any token it did not mint unmodified; tokens are
/// URL-safe, versioned by a prefix bound under the tag, and never name their
/// algorithm; comparisons are constant-time. Both methods are synchronous and
/// must not do I/O: cache key material, never call a KMS per token.
///
/// ```
/// use stateseal::{AesGcmCodec, KeyRing, RingHandle, Secret, StateCodec};
/// use std::sync::Arc;
/// let ring = Arc::new(RingHandle::new(KeyRing::from_secrets(&[Secret::new(vec![9; 32])?])?));
/// let codec = AesGcmCodec::new(ring);
/// let token = codec.seal(b"payload")?;
/// assert!(token.starts_with("v1."));
/// assert_eq!(codec.unseal(&token)?, b"payload");
/// # Ok::<(), stateseal::Error>(())
/// ```
pub trait StateCodec: Send + Sync {
    /// Returns an opaque URL-safe token protecting `payload`.
    ///
    /// # Errors
    /// Any error means nothing may be sent; the boundary answers `-32603`.
    fn seal(&self, payload: &[u8]) -> Result<String, Error>;

    /// [`StateCodec::seal`] of `buffer[SEAL_HEADROOM..]`, handing over the buffer.
    ///
    /// The envelope mints through this method: a codec may write its header
    /// into the first [`SEAL_HEADROOM`] bytes and encrypt the payload in place,
    /// which saves a copy and leaves no plaintext copy behind. The default
    /// calls [`StateCodec::seal`].
    ///
    /// ```
    /// use stateseal::{AesGcmCodec, KeyRing, RingHandle, SEAL_HEADROOM, Secret, StateCodec};
    /// use std::sync::Arc;
    /// let ring = Arc::new(RingHandle::new(KeyRing::from_secrets(&[Secret::new(vec![9; 32])?])?));
    /// let codec = AesGcmCodec::new(ring);
    /// let mut buffer = vec![0; SEAL_HEADROOM];
    /// buffer.extend_from_slice(b"payload");
    /// let token = codec.seal_with_headroom(buffer)?;
    /// assert_eq!(codec.unseal(&token)?, b"payload");
    /// # Ok::<(), stateseal::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`StateCodec::seal`]; a buffer shorter than the headroom is an error.
    fn seal_with_headroom(&self, buffer: Vec<u8>) -> Result<String, Error> {
        let payload = buffer
            .get(SEAL_HEADROOM..)
            .ok_or(Error::Seal("buffer shorter than its headroom"))?;
        self.seal(payload)
    }

    /// [`StateCodec::seal_with_headroom`] writing the token's ASCII bytes
    /// into `token` (cleared first) instead of a new `String`: for bindings
    /// that copy the token into their runtime's own string anyway, a buffer
    /// kept between calls. The default copies the `String` in.
    ///
    /// ```
    /// use stateseal::{AesGcmCodec, KeyRing, RingHandle, SEAL_HEADROOM, Secret, StateCodec};
    /// use std::sync::Arc;
    /// let ring = Arc::new(RingHandle::new(KeyRing::from_secrets(&[Secret::new(vec![9; 32])?])?));
    /// let codec = AesGcmCodec::new(ring);
    /// let mut token = Vec::new();
    /// let mut buffer = vec![0; SEAL_HEADROOM];
    /// buffer.extend_from_slice(b"payload");
    /// codec.seal_with_headroom_into(buffer, &mut token)?;
    /// assert_eq!(codec.unseal(std::str::from_utf8(&token).unwrap())?, b"payload");
    /// # Ok::<(), stateseal::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`StateCodec::seal_with_headroom`]; `token` is then empty.
    fn seal_with_headroom_into(&self, buffer: Vec<u8>, token: &mut Vec<u8>) -> Result<(), Error> {
        token.clear();
        token.extend_from_slice(self.seal_with_headroom(buffer)?.as_bytes());
        Ok(())
    }

    /// Reverses [`StateCodec::seal`].
    ///
    /// # Errors
    /// [`Error::Rejected`] with a log-only reason for a malformed, unauthentic
    /// or unknown-key token.
    fn unseal(&self, token: &str) -> Result<Vec<u8>, Error>;

    /// [`StateCodec::unseal`] that may leave the payload inside a larger
    /// buffer: returns the buffer and the payload's range in it.
    ///
    /// The envelope verifies through this method, so the built-in codec
    /// decrypts in place and the payload is moved once, not twice. The default
    /// calls [`StateCodec::unseal`] (the whole buffer is the payload).
    ///
    /// ```
    /// use stateseal::{AesGcmCodec, KeyRing, RingHandle, Secret, StateCodec};
    /// use std::sync::Arc;
    /// let ring = Arc::new(RingHandle::new(KeyRing::from_secrets(&[Secret::new(vec![9; 32])?])?));
    /// let codec = AesGcmCodec::new(ring);
    /// let (buffer, payload) = codec.unseal_in_place(&codec.seal(b"payload")?)?;
    /// assert_eq!(&buffer[payload], b"payload");
    /// # Ok::<(), stateseal::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`StateCodec::unseal`].
    fn unseal_in_place(&self, token: &str) -> Result<(Vec<u8>, Range<usize>), Error> {
        let payload = self.unseal(token)?;
        let len = payload.len();
        Ok((payload, 0..len))
    }

    /// [`StateCodec::unseal_in_place`] of a token's bytes (as a binding has
    /// them: a token that is not UTF-8 is malformed) into `buffer`, whose
    /// bytes the codec may overwrite and reuse (a binding's buffer kept
    /// between calls, wiped before it is kept). The default checks the token
    /// is UTF-8 and ignores the buffer.
    ///
    /// ```
    /// use stateseal::{AesGcmCodec, KeyRing, RingHandle, Secret, StateCodec};
    /// use std::sync::Arc;
    /// let ring = Arc::new(RingHandle::new(KeyRing::from_secrets(&[Secret::new(vec![9; 32])?])?));
    /// let codec = AesGcmCodec::new(ring);
    /// let kept = vec![0; 256];
    /// let (buffer, payload) = codec.unseal_in_place_into(codec.seal(b"payload")?.as_bytes(), kept)?;
    /// assert_eq!(&buffer[payload], b"payload");
    /// # Ok::<(), stateseal::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`StateCodec::unseal`].
    fn unseal_in_place_into(
        &self,
        token: &[u8],
        buffer: Vec<u8>,
    ) -> Result<(Vec<u8>, Range<usize>), Error> {
        drop(buffer);
        let token = std::str::from_utf8(token)
            .map_err(|_| Error::Rejected(crate::reason::RejectReason::Malformed))?;
        self.unseal_in_place(token)
    }

    /// Whether a state this codec unsealed, issued at `iat` and presented by
    /// the principal whose bytes are `principal`, is revoked: asked by the
    /// envelope after every other check passed. The default revokes nothing;
    /// the built-in codec consults the revocations its ring carries
    /// ([`KeyRing::with_revocations`](crate::KeyRing::with_revocations)).
    fn revoked(&self, iat: f64, principal: Option<&[u8]>) -> bool {
        let _ = (iat, principal);
        false
    }
}

#[cfg(test)]
mod tests;
