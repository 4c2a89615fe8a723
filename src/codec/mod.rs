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

    fn v2_codec(keys: &[u8]) -> AesGcmCodec {
        let keys = keys
            .iter()
            .map(|b| {
                Arc::new(crate::RingKey::with_format(
                    &Secret::new(vec![*b; 32]).unwrap(),
                    TokenFormat::V2,
                ))
            })
            .collect();
        AesGcmCodec::new(Arc::new(RingHandle::new(KeyRing::from_keys(keys).unwrap())))
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
            (&b"payload"[..], KID_LEN + NONCE_LEN)
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
    fn v2_tokens_round_trip_and_every_bit_flip_rejects() {
        let c = v2_codec(b"k");
        let t = c.seal(b"{}").unwrap();
        assert!(t.starts_with("v2."), "{t}");
        assert_eq!(c.unseal(&t).unwrap(), b"{}");
        let raw = b64u_decode(&t[3..]).unwrap();
        assert_eq!(raw.len(), KID_LEN + 24 + 2 + TAG_LEN);
        for i in 0..raw.len() {
            for bit in 0..8 {
                let mut r = raw.clone();
                r[i] ^= 1 << bit;
                let forged = format!("v2.{}", b64u_encode(&r));
                let expect = if i < KID_LEN {
                    RejectReason::UnknownKey
                } else {
                    RejectReason::Seal
                };
                assert_eq!(reason(c.unseal(&forged)), expect, "byte {i} bit {bit}");
            }
        }
        let (buffer, at) = c.unseal_in_place(&t).unwrap();
        assert_eq!((&buffer[at.clone()], at.start), (&b"{}"[..], KID_LEN + 24));
    }

    /// One secret as a v1 and as a v2 key: two keys, two ids, and a token
    /// never opens under the other format's key, whatever its prefix says.
    #[test]
    fn a_token_opens_only_under_its_own_format() {
        let secret = Secret::new(vec![5; 32]).unwrap();
        let v1 = Arc::new(crate::RingKey::new(&secret));
        let v2 = Arc::new(crate::RingKey::with_format(&secret, TokenFormat::V2));
        assert_ne!(v1.kid(), v2.kid());
        let both = AesGcmCodec::new(Arc::new(RingHandle::new(
            KeyRing::from_keys(vec![v2.clone(), v1.clone()]).unwrap(),
        )));
        let old = AesGcmCodec::new(Arc::new(RingHandle::new(
            KeyRing::from_keys(vec![v1]).unwrap(),
        )));
        let t2 = both.seal(b"x").unwrap();
        let t1 = old.seal(b"y").unwrap();
        assert_eq!(both.unseal(&t1).unwrap(), b"y", "a mixed ring opens v1");
        assert_eq!(both.unseal(&t2).unwrap(), b"x");
        assert_eq!(reason(old.unseal(&t2)), RejectReason::UnknownKey);
        // The v2 body relabelled v1 (and back): the prefix is bound, so nothing opens.
        let relabelled = format!("v1.{}", &t2[3..]);
        assert!(both.unseal(&relabelled).is_err());
        let relabelled = format!("v2.{}", &t1[3..]);
        assert!(both.unseal(&relabelled).is_err());
        assert_eq!(
            token_key_id(&t2),
            Some(both.ring().current().unwrap().primary().kid())
        );
    }

    #[test]
    fn a_v1_key_past_its_seal_limit_stops_before_sealing() {
        let c = codec(b"b");
        let key = c.ring().current().unwrap().primary().clone();
        key.set_seal_limit(2);
        assert_eq!(key.seal_limit(), Some(2));
        let _ = payload_buffer();
        c.seal(b"1").unwrap();
        c.seal(b"2").unwrap();
        let err = c.seal(b"3").unwrap_err();
        assert!(
            matches!(&err, Error::SealBudgetExhausted { limit: 2, kid } if *kid == key.kid().to_hex()),
            "{err}"
        );
        assert!(
            err.to_string().contains("v2 key, which carries no budget"),
            "{err}"
        );
        assert_eq!(key.seal_count(), 2, "the refused seal is not counted");
        // The refused payload's buffer (plaintext) is not kept for reuse.
        assert_eq!(payload_buffer().capacity(), 0);
        key.set_seal_limit(3);
        c.seal(b"3").unwrap();
    }

    #[test]
    fn empty_ring_fails_closed() {
        let c = AesGcmCodec::new(Arc::new(RingHandle::empty()));
        assert_eq!(c.seal(b"x"), Err(Error::NotReady));
        let foreign = codec(b"z").seal(b"x").unwrap();
        assert_eq!(reason(c.unseal(&foreign)), RejectReason::UnknownKey);
    }

    #[test]
    fn malformed_shapes() {
        let c = codec(b"k");
        for bad in [
            "", "v1.", "V1.AAAA", "v2.AAAA", "v3.AAAA", "v1.AAAA=", "v1.!!!!", "v2", "é",
        ] {
            assert_eq!(reason(c.unseal(bad)), RejectReason::Malformed, "{bad:?}");
        }
        let short = format!(
            "v1.{}",
            b64u_encode(&[0u8; KID_LEN + NONCE_LEN + TAG_LEN - 1])
        );
        assert_eq!(reason(c.unseal(&short)), RejectReason::Malformed);
        let short = format!("v2.{}", b64u_encode(&[0u8; KID_LEN + 24 + TAG_LEN - 1]));
        assert_eq!(
            reason(v2_codec(b"k").unseal(&short)),
            RejectReason::Malformed
        );
    }
}
