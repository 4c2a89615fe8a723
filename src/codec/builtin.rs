//! The built-in codec: AES-256-GCM (`v1.`) and XAES-256-GCM (`v2.`) tokens
//! under the keys of a [`RingHandle`], sealed and opened in place.

use std::ops::Range;
use std::sync::Arc;

use super::{InPlaceCodec, PREFIX_LEN, SEAL_HEADROOM, StateCodec, TAG_LEN, base64url, scratch};
use crate::error::{DataError, Error};
use crate::key::{KID_LEN, KeyId, TokenFormat};
use crate::random::RandomSource;
use crate::reason::RejectReason;
use crate::ring::RingHandle;

/// The built-in codec: `v1.` ‖ base64url(kid ‖ nonce ‖ AES-256-GCM(payload) ‖ tag)
/// for static keys (the Python SDK's format), and `v2.` ‖ base64url(kid ‖
/// 192-bit nonce ‖ XAES-256-GCM(payload) ‖ tag) for keyset keys: each key
/// seals the format it was made for.
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
    let (format, body) = prefixed(token.as_bytes())?;
    Some((format, base64url::decode(body)?))
}

/// A token's format, from its prefix, and its body after it. The bytes need
/// not be UTF-8 (a binding's): the body's decoder refuses any byte outside
/// base64url's alphabet.
fn prefixed(token: &[u8]) -> Option<(TokenFormat, &[u8])> {
    let (prefix, body) = token.split_at_checked(PREFIX_LEN)?;
    let format = TokenFormat::from_prefix(std::str::from_utf8(prefix).ok()?)?;
    Some((format, body))
}

fn reject(reason: RejectReason) -> Error {
    Error::Rejected(reason)
}

impl AesGcmCodec {
    /// Seals `body[SEAL_HEADROOM..]` in place under the primary key, the tag
    /// appended: the token's bytes are `body[start..]`, before base64url.
    fn seal_body(&self, mut body: Vec<u8>) -> Result<(TokenFormat, Vec<u8>, usize), Error> {
        if body.len() < SEAL_HEADROOM {
            return Err(Error::Data(DataError::Seal(
                "buffer shorter than its headroom",
            )));
        }
        let guard = self.ring.load();
        let ring = guard.as_ref().ok_or(Error::Data(DataError::NotReady))?;
        if !ring.seals() {
            return Err(Error::Data(DataError::SealingStopped));
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
        Ok((format, body, start))
    }

    /// Opens a decoded token (`raw`: key id, nonce, ciphertext, tag) in place.
    fn open_raw(
        &self,
        format: TokenFormat,
        mut raw: Vec<u8>,
    ) -> Result<(Vec<u8>, Range<usize>), Error> {
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
}

impl StateCodec for AesGcmCodec {
    fn seal(&self, payload: &[u8]) -> Result<String, Error> {
        let mut buffer = scratch::payload_buffer();
        buffer.reserve(SEAL_HEADROOM + TAG_LEN + payload.len());
        buffer.resize(SEAL_HEADROOM, 0);
        buffer.extend_from_slice(payload);
        self.seal_in_place_to_string(buffer)
    }

    fn unseal(&self, token: &str) -> Result<Vec<u8>, Error> {
        let (mut raw, payload) = self.unseal_in_place(token.as_bytes(), Vec::new())?;
        let len = payload.len();
        raw.copy_within(payload, 0);
        raw.truncate(len);
        Ok(raw)
    }

    fn in_place(&self) -> Option<&dyn InPlaceCodec> {
        Some(self)
    }
}

impl InPlaceCodec for AesGcmCodec {
    fn seal_in_place(&self, body: Vec<u8>, token: &mut Vec<u8>) -> Result<(), Error> {
        token.clear();
        let (format, body, start) = self.seal_body(body)?;
        token.extend_from_slice(format.prefix().as_bytes());
        base64url::encode_bytes_into(&body[start..], token);
        scratch::keep_sealed(body);
        Ok(())
    }

    fn seal_in_place_to_string(&self, body: Vec<u8>) -> Result<String, Error> {
        let (format, body, start) = self.seal_body(body)?;
        let sealed = &body[start..];
        let mut token = String::with_capacity(PREFIX_LEN + sealed.len().div_ceil(3) * 4);
        token.push_str(format.prefix());
        base64url::encode_into(sealed, &mut token);
        // Encrypted in place: the buffer holds no plaintext now.
        scratch::keep_sealed(body);
        Ok(token)
    }

    fn unseal_in_place(
        &self,
        token: &[u8],
        mut raw: Vec<u8>,
    ) -> Result<(Vec<u8>, Range<usize>), Error> {
        let format = prefixed(token)
            .filter(|(_, body)| base64url::decode_into(body, &mut raw))
            .ok_or(reject(RejectReason::Malformed))?
            .0;
        self.open_raw(format, raw)
    }
}

/// The associated data: the format's prefix and the key id.
fn aad(format: TokenFormat, kid: &[u8; KID_LEN]) -> [u8; PREFIX_LEN + KID_LEN] {
    let mut aad = [0u8; PREFIX_LEN + KID_LEN];
    aad[..PREFIX_LEN].copy_from_slice(format.prefix().as_bytes());
    aad[PREFIX_LEN..].copy_from_slice(kid);
    aad
}
