//! XAES-256-GCM (C2SP, <https://c2sp.org/XAES-256-GCM>): AES-256-GCM under a
//! per-message key derived from the input key and the first half of a 192-bit
//! nonce by the NIST SP 800-108r1 counter KDF with CMAC-AES-256.
//!
//! Built from aws-lc's AES-256 block function (ECB, both KDF blocks in one
//! call) and its AES-256-GCM under the derived key; the derived key bytes are
//! wiped after use. Setting up an AES-256-GCM key (key schedule and GHASH
//! table) costs about 0.2 µs here, several times the rest of a small seal.
//!
//! So a sealing thread keeps its derived key for [`BATCH`] seals: it draws the
//! nonce's first half (the KDF input) once per batch and its second half (the
//! GCM nonce) from the OS for every seal. Every token is an ordinary
//! XAES-256-GCM message and opens anywhere. The bound: within a batch the GCM
//! nonces are 96 random bits under one key, a collision chance of at most
//! B²/2^97 per batch; over q seals in q/B batches, q·B/2^97. With B = 2^8, one
//! key seals 2^57 times (1.4·10^17) at a 2^-32 risk, instead of the
//! specification's 2^80 with a fresh half per message: a fleet sealing 10^9
//! states a second would need four and a half years, and keys rotate daily.
//! Batches with the same first half (96 random bits) are a negligible extra
//! term. A `fork`ed child that inherits a batch goes on drawing second halves
//! from the kernel, independently of its parent: the same bound.
//!
//! Opening, a thread reuses the derived key of its own batch and of the last
//! few halves whose tokens it opened: a derived key is a function of the key
//! and the half, so reuse changes no result, and only a token whose tag
//! verified leaves its half behind.

use aws_lc_rs::cipher::{AES_256, EncryptingKey, EncryptionContext, UnboundCipherKey};
use std::cell::RefCell;

use thread_local::ThreadLocal;
use zeroize::Zeroizing;

use crate::cipher::aead::{AeadBackend, GcmKey};
use crate::error::{DataError, Error};
use crate::random::RandomSource;

/// Nonce length: 192 bits.
pub(crate) const NONCE_LEN: usize = 24;
/// Tag length (AES-256-GCM's).
pub(crate) const TAG_LEN: usize = 16;

const BLOCK: usize = 16;
/// The KDF's label, the ASCII letter `X`.
const LABEL: u8 = 0x58;
/// The nonce's first half: the KDF input, shared by a batch.
const PREFIX_LEN: usize = 12;
/// Seals under one derived key before a thread derives the next (see the
/// module's bound).
pub(crate) const BATCH: u32 = 1 << 8;

/// A thread's current derived key, the first nonce half it was derived from,
/// and how many more seals it may make.
struct Batch {
    prefix: [u8; PREFIX_LEN],
    gcm: GcmKey,
    left: u32,
}

/// An XAES-256-GCM key: the AES-256 block function under the input key and
/// the CMAC subkey K1 (steps 1 and 2 of the C2SP algorithm, done once), and
/// each sealing thread's batch (dropped with the key, so no derived key
/// outlives it).
pub(crate) struct XaesKey {
    block: EncryptingKey,
    k1: Zeroizing<[u8; BLOCK]>,
    backend: AeadBackend,
    sealing: ThreadLocal<RefCell<Option<Batch>>>,
    opening: ThreadLocal<RefCell<Opened>>,
}

impl std::fmt::Debug for XaesKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("XaesKey(<redacted>)")
    }
}

fn unspecified(_: aws_lc_rs::error::Unspecified) -> Error {
    Error::Data(DataError::Seal("XAES-256-GCM failed"))
}

impl XaesKey {
    /// A key from 32 bytes whose derived keys' AES-256-GCM runs on
    /// `backend` (the KDF's block steps are aws-lc's: ring has no block
    /// function in its API).
    ///
    /// # Errors
    /// [`DataError::Seal`] if aws-lc refuses the key (never for 32 bytes).
    pub(crate) fn new(key: &[u8; 32], backend: AeadBackend) -> Result<Self, Error> {
        let block = EncryptingKey::ecb(UnboundCipherKey::new(&AES_256, key).map_err(unspecified)?)
            .map_err(unspecified)?;
        let mut l = Zeroizing::new([0u8; BLOCK]);
        block
            .less_safe_encrypt(&mut l[..], EncryptionContext::None)
            .map_err(unspecified)?;
        // K1 = L << 1, reduced by x^128 + x^7 + x^2 + x + 1 when L's top bit was set.
        let mut k1 = Zeroizing::new([0u8; BLOCK]);
        let carry = l[0] >> 7;
        for i in 0..BLOCK {
            let next = if i + 1 < BLOCK { l[i + 1] >> 7 } else { 0 };
            k1[i] = (l[i] << 1) | next;
        }
        k1[BLOCK - 1] ^= 0x87 * carry;
        Ok(Self {
            block,
            k1,
            backend,
            sealing: ThreadLocal::new(),
            opening: ThreadLocal::new(),
        })
    }

    /// The backend of the derived keys' AES-256-GCM.
    pub(crate) fn backend(&self) -> AeadBackend {
        self.backend
    }

    /// The derived AES-256-GCM key for `nonce` (steps 3 to 5).
    fn derive_key(&self, nonce: &[u8; NONCE_LEN]) -> Result<Zeroizing<[u8; 2 * BLOCK]>, Error> {
        let mut kx = Zeroizing::new([0u8; 2 * BLOCK]);
        for (i, half) in kx.chunks_exact_mut(BLOCK).enumerate() {
            half[..4].copy_from_slice(&[0, i as u8 + 1, LABEL, 0]);
            half[4..].copy_from_slice(&nonce[..PREFIX_LEN]);
            for (b, k) in half.iter_mut().zip(self.k1.iter()) {
                *b ^= k;
            }
        }
        // Both blocks in one call: ECB encrypts each 16-byte block on its own.
        self.block
            .less_safe_encrypt(&mut kx[..], EncryptionContext::None)
            .map_err(unspecified)?;
        Ok(kx)
    }

    /// The derived key for `nonce`, prepared by this key's backend.
    fn gcm_key(&self, nonce: &[u8; NONCE_LEN]) -> Result<GcmKey, Error> {
        GcmKey::new(self.backend, &*self.derive_key(nonce)?)
    }

    /// As `gcm_key`, prepared for messages of about `len` bytes only (a
    /// `split` backend sets up the one library that length goes to).
    fn gcm_key_for(&self, nonce: &[u8; NONCE_LEN], len: usize) -> Result<GcmKey, Error> {
        GcmKey::sized(self.backend, &*self.derive_key(nonce)?, len)
    }

    /// Draws a nonce into `nonce` (a fresh first half once per batch, a fresh
    /// second half every time), encrypts `in_out` in place under it; the tag.
    ///
    /// # Errors
    /// [`DataError::Random`] if the OS gives no randomness, [`DataError::Seal`] if
    /// aws-lc fails.
    pub(crate) fn seal_fresh(
        &self,
        random: &RandomSource,
        nonce: &mut [u8; NONCE_LEN],
        aad: &[u8],
        in_out: &mut [u8],
    ) -> Result<[u8; TAG_LEN], Error> {
        let mut slot = self.sealing.get_or_default().borrow_mut();
        let batch = match &mut *slot {
            Some(batch) if batch.left > 0 => {
                nonce[..PREFIX_LEN].copy_from_slice(&batch.prefix);
                random.fill(&mut nonce[PREFIX_LEN..])?;
                batch
            }
            stale => {
                random.fill(nonce)?;
                let mut prefix = [0u8; PREFIX_LEN];
                prefix.copy_from_slice(&nonce[..PREFIX_LEN]);
                let gcm = self.gcm_key(nonce)?;
                stale.insert(Batch {
                    prefix,
                    gcm,
                    left: BATCH,
                })
            }
        };
        batch.left -= 1;
        seal_with(&batch.gcm, nonce, aad, in_out)
    }

    /// Encrypts `in_out` in place under the given nonce; the tag (the
    /// specification's vectors fix the nonce).
    #[cfg(test)]
    pub(crate) fn seal(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        in_out: &mut [u8],
    ) -> Result<[u8; TAG_LEN], Error> {
        seal_with(&self.gcm_key(nonce)?, nonce, aad, in_out)
    }

    /// Decrypts `in_out` (ciphertext and tag) in place; the plaintext's
    /// length. aws-lc checks the tag in constant time and leaves no plaintext
    /// behind when it fails.
    ///
    /// # Errors
    /// [`DataError::Seal`] when the tag does not verify (or the AEAD fails).
    pub(crate) fn open(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        in_out: &mut [u8],
    ) -> Result<usize, Error> {
        let prefix = &nonce[..PREFIX_LEN];
        // The thread's own batch, then the first halves it opened lately.
        if let Some(slot) = self.sealing.get()
            && let Some(batch) = slot.borrow().as_ref().filter(|b| b.prefix == prefix)
        {
            return open_with(&batch.gcm, nonce, aad, in_out);
        }
        let mut opened = self.opening.get_or_default().borrow_mut();
        if let Some(gcm) = opened.find(prefix) {
            return open_with(gcm, nonce, aad, in_out);
        }
        let gcm = self.gcm_key_for(nonce, in_out.len())?;
        let len = open_with(&gcm, nonce, aad, in_out)?;
        // Only a key that opened an authentic token is kept: forged first
        // halves cannot evict the genuine ones.
        opened.keep(prefix, gcm);
        Ok(len)
    }
}

/// The derived keys of the first halves a thread opened lately (a
/// deterministic function of the key and the half, so any of them is as good
/// as deriving again), replaced oldest first.
#[derive(Default)]
struct Opened {
    keys: [Option<([u8; PREFIX_LEN], GcmKey)>; OPENED],
    next: usize,
}

/// Derived keys a thread keeps for opening, per key.
const OPENED: usize = 4;

impl Opened {
    fn find(&self, prefix: &[u8]) -> Option<&GcmKey> {
        self.keys
            .iter()
            .flatten()
            .find(|(p, _)| p == prefix)
            .map(|(_, gcm)| gcm)
    }

    fn keep(&mut self, prefix: &[u8], gcm: GcmKey) {
        let mut p = [0u8; PREFIX_LEN];
        p.copy_from_slice(prefix);
        self.keys[self.next] = Some((p, gcm));
        self.next = (self.next + 1) % OPENED;
    }
}

fn open_with(
    gcm: &GcmKey,
    nonce: &[u8; NONCE_LEN],
    aad: &[u8],
    in_out: &mut [u8],
) -> Result<usize, Error> {
    gcm.open(gcm_nonce(nonce), aad, in_out)
        .ok_or(Error::Data(DataError::Seal("XAES-256-GCM failed")))
}

fn seal_with(
    gcm: &GcmKey,
    nonce: &[u8; NONCE_LEN],
    aad: &[u8],
    in_out: &mut [u8],
) -> Result<[u8; TAG_LEN], Error> {
    gcm.seal(gcm_nonce(nonce), aad, in_out)
}

/// The AES-256-GCM nonce: the second half of the XAES nonce.
fn gcm_nonce(nonce: &[u8; NONCE_LEN]) -> [u8; 12] {
    let mut n = [0u8; 12];
    n.copy_from_slice(&nonce[PREFIX_LEN..]);
    n
}

#[cfg(test)]
mod tests;
