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

use crate::error::{DataError, Error};
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
/// Bytes free at the front of the buffer [`InPlaceCodec::seal_in_place`] receives
/// (room for the built-in codec's key id and its longest nonce).
pub const SEAL_HEADROOM: usize = MAX_HEADER;

/// Authenticated encryption of the claims envelope, like the Python SDK's `RequestStateCodec`.
///
/// Requirements: `unseal(seal(p)) == p`; `unseal` fails with
/// [`Error::Rejected`] for any token it did not mint unmodified; tokens are
/// URL-safe, versioned by a prefix bound under the tag, and never name their
/// algorithm; comparisons are constant-time. Both methods are synchronous and
/// must not do I/O: cache key material, never call a KMS per token.
/// Revocation is not the codec's: the [`Envelope`](crate::Envelope) looks
/// it up in its ring after every other check.
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

    /// Reverses [`StateCodec::seal`].
    ///
    /// # Errors
    /// [`Error::Rejected`] with a log-only reason for a malformed, unauthentic
    /// or unknown-key token.
    fn unseal(&self, token: &str) -> Result<Vec<u8>, Error>;

    /// The same codec's in-place forms, if it has them (the envelope then
    /// seals and opens through them). The default has none.
    fn in_place(&self) -> Option<&dyn InPlaceCodec> {
        None
    }
}

/// A codec that seals and opens inside buffers it is handed: no copy of the
/// payload, no plaintext copy left behind, and a binding's buffers reused
/// between calls. Offered through [`StateCodec::in_place`].
///
/// ```
/// use stateseal::{AesGcmCodec, KeyRing, RingHandle, SEAL_HEADROOM, Secret, StateCodec};
/// use std::sync::Arc;
/// let ring = Arc::new(RingHandle::new(KeyRing::from_secrets(&[Secret::new(vec![9; 32])?])?));
/// let codec = AesGcmCodec::new(ring);
/// let in_place = codec.in_place().expect("the built-in codec works in place");
/// let mut buffer = vec![0; SEAL_HEADROOM];
/// buffer.extend_from_slice(b"payload");
/// let mut token = Vec::new();
/// in_place.seal_in_place(buffer, &mut token)?;
/// let (opened, payload) = in_place.unseal_in_place(&token, Vec::new())?;
/// assert_eq!(&opened[payload], b"payload");
/// # Ok::<(), stateseal::Error>(())
/// ```
pub trait InPlaceCodec: Send + Sync {
    /// [`StateCodec::seal`] of `buffer[SEAL_HEADROOM..]`, handing over the
    /// buffer: the codec may write its header into the first
    /// [`SEAL_HEADROOM`] bytes and encrypt the payload where it is. The
    /// token's ASCII bytes are written into `token` (cleared first).
    ///
    /// # Errors
    /// As [`StateCodec::seal`]; a buffer shorter than the headroom is an
    /// error; `token` is then empty.
    fn seal_in_place(&self, buffer: Vec<u8>, token: &mut Vec<u8>) -> Result<(), Error>;

    /// [`InPlaceCodec::seal_in_place`] giving the token as a new `String`
    /// (no copy through a byte buffer).
    ///
    /// # Errors
    /// As [`InPlaceCodec::seal_in_place`].
    fn seal_in_place_to_string(&self, buffer: Vec<u8>) -> Result<String, Error> {
        let mut token = Vec::new();
        self.seal_in_place(buffer, &mut token)?;
        String::from_utf8(token)
            .map_err(|_| Error::Data(DataError::Seal("a codec wrote a token that is not text")))
    }

    /// [`StateCodec::unseal`] of a token's bytes (as a binding has them: a
    /// token that is not UTF-8 is malformed), decoded into `buffer`, whose
    /// bytes the codec may overwrite and reuse: returns the buffer and the
    /// payload's range in it.
    ///
    /// # Errors
    /// As [`StateCodec::unseal`].
    fn unseal_in_place(
        &self,
        token: &[u8],
        buffer: Vec<u8>,
    ) -> Result<(Vec<u8>, Range<usize>), Error>;
}

#[cfg(test)]
mod tests;
