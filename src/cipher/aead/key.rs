//! An AES-256-GCM key prepared by the process's backend.

use zeroize::Zeroize;

use super::AeadBackend;
use crate::cipher::TAG_LEN;
use crate::error::{DataError, Error};

/// An AES-256-GCM key prepared by one backend, or by both (`Split`: ring
/// seals and opens messages below `AEAD_SPLIT_AT` bytes, aws-lc the others).
pub(crate) enum GcmKey {
    AwsLc(AwsLcGcm),
    Ring(RingGcm),
    Split(RingGcm, AwsLcGcm),
}

type AwsLcGcm = aws_lc_rs::aead::LessSafeKey;

/// ring's prepared key, wiped when dropped. aws-lc cleanses its key
/// schedules itself; ring keeps its schedule and GHASH table inline (544
/// bytes, hence the box) and leaves them in memory. Before the box is freed
/// its contents are overwritten with the schedule of the all-zero key, in
/// place, and the write is kept from being optimised away as dead.
pub(crate) struct RingGcm(Box<ring::aead::LessSafeKey>);

impl Drop for RingGcm {
    fn drop(&mut self) {
        if let Ok(zero) = ring::aead::UnboundKey::new(&ring::aead::AES_256_GCM, &[0; 32]) {
            *self.0 = ring::aead::LessSafeKey::new(zero);
            std::hint::black_box(&*self.0);
        }
    }
}

impl GcmKey {
    /// Prepares `key` (key schedule and GHASH table) with `backend`.
    pub(crate) fn new(backend: AeadBackend, key: &[u8; 32]) -> Result<Self, Error> {
        Ok(match backend {
            AeadBackend::AwsLc => Self::AwsLc(aws_lc(key)?),
            AeadBackend::Ring => Self::Ring(ring_key(key)?),
            AeadBackend::Split => Self::Split(ring_key(key)?, aws_lc(key)?),
        })
    }

    /// As [`GcmKey::new`], for messages of about `len` bytes only: a `Split`
    /// backend prepares the one library that length goes to (a key derived
    /// to open one token need not pay for two key schedules). Any length
    /// still works with the key: both libraries give the same bytes.
    pub(crate) fn sized(backend: AeadBackend, key: &[u8; 32], len: usize) -> Result<Self, Error> {
        Self::new(backend.library_for(len), key)
    }

    /// Which backend prepared the key.
    pub(crate) fn backend(&self) -> AeadBackend {
        match self {
            Self::AwsLc(_) => AeadBackend::AwsLc,
            Self::Ring(_) => AeadBackend::Ring,
            Self::Split(..) => AeadBackend::Split,
        }
    }

    /// The library that seals or opens a message of `len` bytes.
    pub(super) fn for_len(&self, len: usize) -> Lib<'_> {
        match self {
            Self::AwsLc(k) => Lib::AwsLc(k),
            Self::Ring(RingGcm(k)) => Lib::Ring(k),
            Self::Split(RingGcm(small), large) => match AeadBackend::Split.library_for(len) {
                AeadBackend::Ring => Lib::Ring(small),
                _ => Lib::AwsLc(large),
            },
        }
    }

    /// Encrypts `in_out` in place under `nonce`; the tag.
    pub(crate) fn seal(
        &self,
        nonce: [u8; 12],
        aad: &[u8],
        in_out: &mut [u8],
    ) -> Result<[u8; TAG_LEN], Error> {
        let mut out = [0u8; TAG_LEN];
        match self.for_len(in_out.len()) {
            Lib::AwsLc(k) => {
                let n = aws_lc_rs::aead::Nonce::assume_unique_for_key(nonce);
                let tag = k
                    .seal_in_place_separate_tag(n, aws_lc_rs::aead::Aad::from(aad), in_out)
                    .map_err(|_| Error::Data(DataError::Seal("payload too large")))?;
                out.copy_from_slice(tag.as_ref());
            }
            Lib::Ring(k) => {
                let n = ring::aead::Nonce::assume_unique_for_key(nonce);
                let tag = k
                    .seal_in_place_separate_tag(n, ring::aead::Aad::from(aad), in_out)
                    .map_err(|_| Error::Data(DataError::Seal("payload too large")))?;
                out.copy_from_slice(tag.as_ref());
            }
        }
        Ok(out)
    }

    /// Decrypts `in_out` (ciphertext ‖ tag) in place; the plaintext's length,
    /// or `None` when the tag does not verify. Both libraries compare the tag
    /// in constant time; on failure the buffer is wiped here, so no
    /// unauthenticated plaintext is left behind whichever library ran.
    pub(crate) fn open(&self, nonce: [u8; 12], aad: &[u8], in_out: &mut [u8]) -> Option<usize> {
        let plain_len = in_out.len().saturating_sub(TAG_LEN);
        let opened = match self.for_len(plain_len) {
            Lib::AwsLc(k) => k
                .open_in_place(
                    aws_lc_rs::aead::Nonce::assume_unique_for_key(nonce),
                    aws_lc_rs::aead::Aad::from(aad),
                    in_out,
                )
                .map(|p| p.len())
                .ok(),
            Lib::Ring(k) => k
                .open_in_place(
                    ring::aead::Nonce::assume_unique_for_key(nonce),
                    ring::aead::Aad::from(aad),
                    in_out,
                )
                .map(|p| p.len())
                .ok(),
        };
        if opened.is_none() {
            in_out.zeroize();
        }
        opened
    }
}

/// One library's key, borrowed for one message.
pub(super) enum Lib<'a> {
    AwsLc(&'a AwsLcGcm),
    Ring(&'a ring::aead::LessSafeKey),
}

fn aws_lc(key: &[u8; 32]) -> Result<AwsLcGcm, Error> {
    aws_lc_rs::aead::UnboundKey::new(&aws_lc_rs::aead::AES_256_GCM, key)
        .map(aws_lc_rs::aead::LessSafeKey::new)
        .map_err(|_| Error::Data(DataError::Seal("AES-256-GCM key refused")))
}

fn ring_key(key: &[u8; 32]) -> Result<RingGcm, Error> {
    ring::aead::UnboundKey::new(&ring::aead::AES_256_GCM, key)
        .map(|k| RingGcm(Box::new(ring::aead::LessSafeKey::new(k))))
        .map_err(|_| Error::Data(DataError::Seal("AES-256-GCM key refused")))
}
