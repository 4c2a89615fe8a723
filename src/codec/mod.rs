//! Token codecs: the `v1.` AES-256-GCM format and the trait for bringing your own.
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

pub(crate) mod aead;
mod base64url;
mod scratch;
pub(crate) mod xaes;

use std::ops::Range;
use std::sync::Arc;

use crate::error::Error;
use crate::key::{KID_LEN, KeyId, TokenFormat};
use crate::random::RandomSource;
use crate::reason::RejectReason;
use crate::ring::RingHandle;

pub(crate) use base64url::{
    decode as b64u_decode, encode as b64u_encode, encode_16 as b64u_encode_16,
};
pub(crate) use scratch::payload_buffer;

/// The format prefix of v1 tokens (also bound as associated data).
pub const TOKEN_PREFIX: &str = "v1.";
/// Nonce length of v1 tokens in bytes.
pub const NONCE_LEN: usize = 12;
/// Authentication tag length in bytes (both formats).
pub const TAG_LEN: usize = 16;
/// Length of a prefix (`v1.`, `v2.`).
const PREFIX_LEN: usize = 3;
/// The longest header the built-in codec writes: a key id and a v2 nonce.
const MAX_HEADER: usize = KID_LEN + xaes::NONCE_LEN;
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

/// The built-in codec: `v1.` ‖ base64url(kid ‖ nonce ‖ AES-256-GCM(payload) ‖ tag).
///
/// It reads its keys from a [`RingHandle`] once per call, so a rotation is an
/// atomic swap of the ring and never blocks a seal or unseal.
#[derive(Debug)]
pub struct AesGcmCodec {
    ring: Arc<RingHandle>,
    random: RandomSource,
}

impl AesGcmCodec {
    /// A codec over `ring`, drawing nonces from the OS.
    pub fn new(ring: Arc<RingHandle>) -> Self {
        Self {
            ring,
            random: RandomSource::Os,
        }
    }

    /// Replaces the randomness source (the `deterministic-testing` feature only).
    #[cfg(feature = "deterministic-testing")]
    pub fn with_random_source(mut self, random: RandomSource) -> Self {
        self.random = random;
        self
    }

    /// The ring this codec reads.
    pub fn ring(&self) -> &Arc<RingHandle> {
        &self.ring
    }
}

/// The key id a token names, read without authenticating anything (for
/// operators asking "which key sealed this?"); `None` when the token is not
/// well-formed. A forged token can name any key id: only unsealing proves one.
///
/// ```
/// use stateseal::{AesGcmCodec, KeyRing, RingHandle, Secret, StateCodec, token_key_id};
/// use std::sync::Arc;
/// let ring = KeyRing::from_secrets(&[Secret::new(vec![9; 32])?])?;
/// let kid = ring.primary().kid();
/// let token = AesGcmCodec::new(Arc::new(RingHandle::new(ring))).seal(b"payload")?;
/// assert_eq!(token_key_id(&token), Some(kid));
/// assert_eq!(token_key_id("v2.abc"), None);
/// # Ok::<(), stateseal::Error>(())
/// ```
pub fn token_key_id(token: &str) -> Option<KeyId> {
    let (format, raw) = split(token)?;
    if raw.len() < KID_LEN + format.nonce_len() + TAG_LEN {
        return None;
    }
    let mut kid = [0u8; KID_LEN];
    kid.copy_from_slice(&raw[..KID_LEN]);
    Some(KeyId(kid))
}

/// A token's format and decoded body (strict base64url), unauthenticated.
fn split(token: &str) -> Option<(TokenFormat, Vec<u8>)> {
    let format = TokenFormat::from_prefix(token.get(..PREFIX_LEN)?)?;
    Some((format, base64url::decode(&token[PREFIX_LEN..])?))
}

fn reject(reason: RejectReason) -> Error {
    Error::Rejected(reason)
}

impl StateCodec for AesGcmCodec {
    fn seal(&self, payload: &[u8]) -> Result<String, Error> {
        let mut buffer = scratch::payload_buffer();
        buffer.reserve(SEAL_HEADROOM + TAG_LEN + payload.len());
        buffer.resize(SEAL_HEADROOM, 0);
        buffer.extend_from_slice(payload);
        self.seal_with_headroom(buffer)
    }

    fn seal_with_headroom(&self, mut body: Vec<u8>) -> Result<String, Error> {
        if body.len() < SEAL_HEADROOM {
            return Err(Error::Seal("buffer shorter than its headroom"));
        }
        let guard = self.ring.load();
        let ring = guard.as_ref().ok_or(Error::NotReady)?;
        if !ring.seals() {
            return Err(Error::SealingStopped);
        }
        let key = ring.primary();
        // The budget is checked before anything is sealed.
        key.take_seal()?;
        let format = key.format();
        let kid = key.kid().0;
        // The header sits right before the payload: a v1 token leaves the
        // first bytes of the headroom unused.
        let start = SEAL_HEADROOM - KID_LEN - format.nonce_len();
        let (header, payload) = body.split_at_mut(SEAL_HEADROOM);
        let (kid_at, nonce) = header[start..].split_at_mut(KID_LEN);
        kid_at.copy_from_slice(&kid);
        // Encrypted in place: from here on the buffer holds no plaintext.
        let tag = key.seal_in_place(&self.random, nonce, &aad(format, &kid), payload)?;
        body.extend_from_slice(&tag);
        let sealed = &body[start..];
        let mut token = String::with_capacity(PREFIX_LEN + sealed.len().div_ceil(3) * 4);
        token.push_str(format.prefix());
        base64url::encode_into(sealed, &mut token);
        // Encrypted in place above: the buffer holds no plaintext now.
        scratch::keep_sealed(body);
        Ok(token)
    }

    fn unseal(&self, token: &str) -> Result<Vec<u8>, Error> {
        let (mut raw, payload) = self.unseal_in_place(token)?;
        let len = payload.len();
        raw.copy_within(payload, 0);
        raw.truncate(len);
        Ok(raw)
    }

    fn unseal_in_place(&self, token: &str) -> Result<(Vec<u8>, Range<usize>), Error> {
        let (format, mut raw) = split(token).ok_or(reject(RejectReason::Malformed))?;
        let header = KID_LEN + format.nonce_len();
        if raw.len() < header + TAG_LEN {
            return Err(reject(RejectReason::Malformed));
        }
        let mut kid = [0u8; KID_LEN];
        kid.copy_from_slice(&raw[..KID_LEN]);
        let guard = self.ring.load();
        // Exactly one key is tried: the one of this format with this id.
        let Some(key) = guard
            .as_ref()
            .and_then(|ring| ring.get(format, &KeyId(kid)))
        else {
            // Never a reason to read the store: anyone can forge a key id.
            return Err(reject(RejectReason::UnknownKey));
        };
        let (head, sealed) = raw.split_at_mut(header);
        // aws-lc checks the tag in constant time and leaves no plaintext behind on failure;
        // decrypting where the ciphertext is saves moving the payload to the front.
        let plain_len = key
            .open_in_place(&head[KID_LEN..], &aad(format, &kid), sealed)
            .ok_or(reject(RejectReason::Seal))?;
        Ok((raw, header..header + plain_len))
    }

    fn revoked(&self, iat: f64, principal: Option<&[u8]>) -> bool {
        // The ring loaded now, not the one that unsealed: a newer list only knows more.
        self.ring.may_revoke()
            && self
                .ring
                .load()
                .as_ref()
                .is_some_and(|ring| ring.revocations().covers(iat, principal))
    }
}

/// The associated data: the format's prefix and the key id.
fn aad(format: TokenFormat, kid: &[u8; KID_LEN]) -> [u8; PREFIX_LEN + KID_LEN] {
    let mut aad = [0u8; PREFIX_LEN + KID_LEN];
    aad[..PREFIX_LEN].copy_from_slice(format.prefix().as_bytes());
    aad[PREFIX_LEN..].copy_from_slice(kid);
    aad
}

#[cfg(test)]
mod tests;
