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
//! reuse a nonce (96 random bits from the kernel per token, seals counted per
//! key so rotation happens long before the 2^32 bound).
//! Replay within the TTL is not the codec's job: the claims envelope binds a
//! token to its request, audience, principal and expiry.

mod base64url;
mod scratch;
// The AEAD of v2 tokens (keys without a seal budget); wired into the token format next.
#[allow(dead_code)]
mod xaes;

use std::ops::Range;
use std::sync::Arc;

use aws_lc_rs::aead::{Aad, Nonce};

use crate::error::Error;
use crate::key::{KID_LEN, KeyId};
use crate::random::RandomSource;
use crate::reason::RejectReason;
use crate::ring::RingHandle;

pub(crate) use base64url::{
    decode as b64u_decode, encode as b64u_encode, encode_16 as b64u_encode_16,
};
pub(crate) use scratch::payload_buffer;

/// The format prefix of v1 tokens (also bound as associated data).
pub const TOKEN_PREFIX: &str = "v1.";
/// Nonce length in bytes.
pub const NONCE_LEN: usize = 12;
/// Authentication tag length in bytes.
pub const TAG_LEN: usize = 16;
const MIN_BODY: usize = KID_LEN + NONCE_LEN + TAG_LEN;
/// Bytes free at the front of the buffer [`StateCodec::seal_with_headroom`] receives
/// (the built-in codec's key id and nonce).
pub const SEAL_HEADROOM: usize = KID_LEN + NONCE_LEN;

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

/// The key id a `v1.` token names, read without authenticating anything (for
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
    let raw = base64url::decode(token.strip_prefix(TOKEN_PREFIX)?)?;
    if raw.len() < MIN_BODY {
        return None;
    }
    let mut kid = [0u8; KID_LEN];
    kid.copy_from_slice(&raw[..KID_LEN]);
    Some(KeyId(kid))
}

fn reject(reason: RejectReason) -> Error {
    Error::Rejected(reason)
}

impl StateCodec for AesGcmCodec {
    fn seal(&self, payload: &[u8]) -> Result<String, Error> {
        let mut buffer = scratch::payload_buffer();
        buffer.reserve(MIN_BODY + payload.len());
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
        let key = ring.primary();
        let kid = key.kid().0;
        let mut nonce = [0u8; NONCE_LEN];
        self.random.fill(&mut nonce)?;
        body[..KID_LEN].copy_from_slice(&kid);
        body[KID_LEN..SEAL_HEADROOM].copy_from_slice(&nonce);
        // Encrypted in place: from here on the buffer holds no plaintext.
        let tag = key
            .cipher()
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad(&kid)),
                &mut body[SEAL_HEADROOM..],
            )
            .map_err(|_| Error::Seal("payload too large"))?;
        body.extend_from_slice(tag.as_ref());
        key.count_seal();
        let mut token = String::with_capacity(TOKEN_PREFIX.len() + body.len().div_ceil(3) * 4);
        token.push_str(TOKEN_PREFIX);
        base64url::encode_into(&body, &mut token);
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
        let body = token
            .strip_prefix(TOKEN_PREFIX)
            .ok_or(reject(RejectReason::Malformed))?;
        let mut raw = base64url::decode(body).ok_or(reject(RejectReason::Malformed))?;
        if raw.len() < MIN_BODY {
            return Err(reject(RejectReason::Malformed));
        }
        let mut kid = [0u8; KID_LEN];
        kid.copy_from_slice(&raw[..KID_LEN]);
        let mut nonce = [0u8; NONCE_LEN];
        nonce.copy_from_slice(&raw[KID_LEN..SEAL_HEADROOM]);
        let guard = self.ring.load();
        let Some(key) = guard.as_ref().and_then(|ring| ring.get(&KeyId(kid))) else {
            // A key we do not know yet may have just been rotated in: ask for an early refresh.
            self.ring.report_miss();
            return Err(reject(RejectReason::UnknownKey));
        };
        // aws-lc checks the tag in constant time and leaves no plaintext behind on failure;
        // decrypting where the ciphertext is saves moving the payload to the front.
        let plain_len = key
            .cipher()
            .open_in_place(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad(&kid)),
                &mut raw[SEAL_HEADROOM..],
            )
            .map_err(|_| reject(RejectReason::Seal))?
            .len();
        Ok((raw, SEAL_HEADROOM..SEAL_HEADROOM + plain_len))
    }
}

fn aad(kid: &[u8; KID_LEN]) -> [u8; 3 + KID_LEN] {
    let mut aad = [0u8; 3 + KID_LEN];
    aad[..3].copy_from_slice(TOKEN_PREFIX.as_bytes());
    aad[3..].copy_from_slice(kid);
    aad
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{KeyRing, Secret};

    fn codec(keys: &[u8]) -> AesGcmCodec {
        let secrets: Vec<Secret> = keys
            .iter()
            .map(|b| Secret::new(vec![*b; 32]).unwrap())
            .collect();
        AesGcmCodec::new(Arc::new(RingHandle::new(
            KeyRing::from_secrets(&secrets).unwrap(),
        )))
    }

    fn reason(r: Result<Vec<u8>, Error>) -> RejectReason {
        r.unwrap_err().reject_reason().unwrap()
    }

    #[test]
    fn roundtrip_and_rotation() {
        let old = codec(b"o");
        let t = old.seal(b"hello").unwrap();
        assert_eq!(old.unseal(&t).unwrap(), b"hello");
        assert_ne!(t, old.seal(b"hello").unwrap(), "fresh nonce per token");
        let new_old = codec(b"no");
        assert_eq!(new_old.unseal(&t).unwrap(), b"hello");
        assert_eq!(reason(codec(b"n").unseal(&t)), RejectReason::UnknownKey);
        assert_eq!(old.ring().current().unwrap().primary().seal_count(), 2);
    }

    #[test]
    fn seals_in_the_handed_over_buffer() {
        let c = codec(b"k");
        let mut buffer = vec![0xaa; SEAL_HEADROOM];
        buffer.extend_from_slice(b"payload");
        let token = c.seal_with_headroom(buffer).unwrap();
        assert_eq!(c.unseal(&token).unwrap(), b"payload");
        assert_eq!(
            c.seal_with_headroom(vec![0; SEAL_HEADROOM - 1]),
            Err(Error::Seal("buffer shorter than its headroom"))
        );
        // A codec that only implements `seal` gets the payload without the headroom.
        struct Echo;
        impl StateCodec for Echo {
            fn seal(&self, payload: &[u8]) -> Result<String, Error> {
                Ok(String::from_utf8_lossy(payload).into_owned())
            }
            fn unseal(&self, _: &str) -> Result<Vec<u8>, Error> {
                Err(Error::Rejected(RejectReason::Malformed))
            }
        }
        let mut buffer = vec![b'#'; SEAL_HEADROOM];
        buffer.extend_from_slice(b"abc");
        assert_eq!(Echo.seal_with_headroom(buffer).unwrap(), "abc");
        // Unsealing in place: the built-in codec's payload sits after its header.
        let (raw, at) = c.unseal_in_place(&token).unwrap();
        assert_eq!(
            (&raw[at.clone()], at.start),
            (&b"payload"[..], SEAL_HEADROOM)
        );
        struct Plain;
        impl StateCodec for Plain {
            fn seal(&self, payload: &[u8]) -> Result<String, Error> {
                Ok(String::from_utf8_lossy(payload).into_owned())
            }
            fn unseal(&self, token: &str) -> Result<Vec<u8>, Error> {
                Ok(token.as_bytes().to_vec())
            }
        }
        assert_eq!(
            Plain.unseal_in_place("abc").unwrap(),
            (b"abc".to_vec(), 0..3)
        );
        assert!(Echo.seal_with_headroom(Vec::new()).is_err());
    }

    #[test]
    fn every_bit_flip_rejects() {
        let c = codec(b"k");
        let t = c.seal(b"{}").unwrap();
        let raw = b64u_decode(&t[3..]).unwrap();
        for i in 0..raw.len() {
            for bit in 0..8 {
                let mut r = raw.clone();
                r[i] ^= 1 << bit;
                let forged = format!("v1.{}", b64u_encode(&r));
                let why = reason(c.unseal(&forged));
                let expect = if i < KID_LEN {
                    RejectReason::UnknownKey
                } else {
                    RejectReason::Seal
                };
                assert_eq!(why, expect, "byte {i} bit {bit}");
            }
        }
    }

    #[test]
    fn empty_ring_fails_closed_and_reports_misses() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let handle = Arc::new(RingHandle::empty());
        let misses = Arc::new(AtomicUsize::new(0));
        let m = misses.clone();
        assert!(handle.set_miss_hook(move || {
            m.fetch_add(1, Ordering::SeqCst);
        }));
        let c = AesGcmCodec::new(handle.clone());
        assert_eq!(c.seal(b"x"), Err(Error::NotReady));
        let foreign = codec(b"z").seal(b"x").unwrap();
        assert_eq!(reason(c.unseal(&foreign)), RejectReason::UnknownKey);
        assert_eq!(misses.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn malformed_shapes() {
        let c = codec(b"k");
        for bad in ["", "v1.", "V1.AAAA", "v2.AAAA", "v1.AAAA=", "v1.!!!!"] {
            assert_eq!(reason(c.unseal(bad)), RejectReason::Malformed, "{bad:?}");
        }
        let short = format!("v1.{}", b64u_encode(&[0u8; MIN_BODY - 1]));
        assert_eq!(reason(c.unseal(&short)), RejectReason::Malformed);
    }
}
