//! The key ring: which key seals, which keys unseal; swapped atomically.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arc_swap::{ArcSwapOption, Guard};

use crate::error::{DataError, Error};
use crate::key::{KeyId, RingKey, TokenFormat};
use crate::revocation::RevocationList;
use crate::secret::{MIN_SECRET_LEN, Secret};

/// Key ids are already uniform SHA-256 output, so the map uses them as the hash.
#[derive(Default)]
struct KidHasher(u64);

impl Hasher for KidHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
}

type KidMap = HashMap<(TokenFormat, KeyId), Arc<RingKey>, BuildHasherDefault<KidHasher>>;

/// An immutable set of prepared keys: the primary seals, every key unseals.
///
/// Build one from secrets (`keys[0]` is the primary, as in the Python SDK) or
/// from already prepared [`RingKey`]s (the rotation scheduler does, so seal
/// counters survive a ring swap).
///
/// ```
/// use stateseal::{KeyRing, Secret};
/// let old = Secret::new(vec![b'o'; 32])?;
/// let new = Secret::new(vec![b'n'; 32])?;
/// let ring = KeyRing::from_secrets(&[new, old])?;
/// assert_eq!(ring.primary().kid().to_string(), "a4be44b2");
/// assert_eq!(ring.len(), 2);
/// # Ok::<(), stateseal::Error>(())
/// ```
#[derive(Debug)]
pub struct KeyRing {
    primary: Arc<RingKey>,
    keys: Vec<Arc<RingKey>>,
    order: Vec<KeyId>,
    by_kid: KidMap,
    seals: bool,
    revocations: Arc<RevocationList>,
}

impl KeyRing {
    /// Builds a ring from secrets; the first one seals.
    ///
    /// # Errors
    /// [`DataError::EmptyRing`], [`DataError::KeyTooShort`] (with the key's index) or
    /// [`DataError::DuplicateKey`] when two secrets derive the same key id.
    pub fn from_secrets(secrets: &[Secret]) -> Result<Self, Error> {
        if secrets.is_empty() {
            return Err(Error::Data(DataError::EmptyRing));
        }
        for (index, s) in secrets.iter().enumerate() {
            if s.len() < MIN_SECRET_LEN {
                return Err(Error::Data(DataError::KeyTooShort {
                    index,
                    len: s.len(),
                }));
            }
        }
        Self::from_keys(secrets.iter().map(|s| Arc::new(RingKey::new(s))).collect())
    }

    /// Builds a ring from raw secret bytes (moved in and wiped); the first one seals.
    ///
    /// # Errors
    /// As [`KeyRing::from_secrets`], with the index of the offending key.
    pub fn from_bytes(keys: Vec<Vec<u8>>) -> Result<Self, Error> {
        let mut secrets = Vec::with_capacity(keys.len());
        for (index, bytes) in keys.into_iter().enumerate() {
            secrets.push(Secret::new(bytes).map_err(|e| match e {
                Error::Data(DataError::KeyTooShort { len, .. }) => {
                    Error::Data(DataError::KeyTooShort { index, len })
                }
                other => other,
            })?);
        }
        Self::from_secrets(&secrets)
    }

    /// Builds a ring from prepared keys; the first one seals.
    ///
    /// Keys of different formats may share an id: a token names its format,
    /// and only the key of that format and id is tried.
    ///
    /// # Errors
    /// [`DataError::EmptyRing`] or [`DataError::DuplicateKey`] (same format and id).
    pub fn from_keys(keys: Vec<Arc<RingKey>>) -> Result<Self, Error> {
        let primary = keys
            .first()
            .cloned()
            .ok_or(Error::Data(DataError::EmptyRing))?;
        let mut by_kid = KidMap::default();
        let mut order = Vec::with_capacity(keys.len());
        for (index, key) in keys.iter().enumerate() {
            let kid = key.kid();
            if by_kid.insert((key.format(), kid), key.clone()).is_some() {
                return Err(Error::Data(DataError::DuplicateKey { index }));
            }
            order.push(kid);
        }
        Ok(Self {
            primary,
            keys,
            order,
            by_kid,
            seals: true,
            revocations: Arc::default(),
        })
    }

    /// This ring, verifying only: every key still unseals, nothing seals
    /// ([`DataError::SealingStopped`]). What an instance cut off from its keyset
    /// holds: the fleet may have moved on to a key it does not know, so it
    /// seals nothing new, while the states it sealed live out their TTL.
    ///
    /// ```
    /// use stateseal::{AesGcmCodec, DataError, Error, KeyRing, RingHandle, Secret, StateCodec};
    /// use std::sync::Arc;
    /// let ring = KeyRing::from_secrets(&[Secret::new(vec![3; 32])?])?;
    /// let handle = Arc::new(RingHandle::new(ring));
    /// let token = AesGcmCodec::new(handle.clone()).seal(b"s")?;
    /// let ring = KeyRing::from_secrets(&[Secret::new(vec![3; 32])?])?.verifying_only();
    /// assert!(!ring.seals());
    /// handle.store(ring);
    /// let codec = AesGcmCodec::new(handle);
    /// assert_eq!(codec.unseal(&token)?, b"s");
    /// assert_eq!(codec.seal(b"t"), Err(Error::Data(DataError::SealingStopped)));
    /// # Ok::<(), stateseal::Error>(())
    /// ```
    #[must_use]
    pub fn verifying_only(mut self) -> Self {
        self.seals = false;
        self
    }

    /// This ring, refusing the verified states `revocations` covers: the
    /// scheduler publishes the keyset's entries with the keys, so verifying
    /// reads them with the ring it already loads.
    #[must_use]
    pub fn with_revocations(mut self, revocations: RevocationList) -> Self {
        self.revocations = Arc::new(revocations);
        self
    }

    /// The revocations this ring carries (empty unless set).
    pub fn revocations(&self) -> &RevocationList {
        &self.revocations
    }

    /// Whether the primary key may seal (see [`KeyRing::verifying_only`]).
    pub fn seals(&self) -> bool {
        self.seals
    }

    /// A ring holding one fresh random key that lives only in this process.
    ///
    /// Suits a single-process server (stdio, one worker). States minted by any
    /// other instance, or before a restart, are rejected; a warning says so.
    ///
    /// # Errors
    /// [`DataError::Random`] when the OS cannot supply randomness.
    pub fn ephemeral() -> Result<Self, Error> {
        tracing::warn!(
            "stateseal: using an ephemeral process-local key; requestState minted by other \
             instances or before a restart will be rejected (share a keyset for fleets)"
        );
        Self::from_secrets(&[Secret::generate()?])
    }

    /// The key that seals.
    pub fn primary(&self) -> &Arc<RingKey> {
        &self.primary
    }

    /// The key of `format` with id `kid`, if it is in the ring.
    pub fn get(&self, format: TokenFormat, kid: &KeyId) -> Option<&Arc<RingKey>> {
        self.by_kid.get(&(format, *kid))
    }

    /// Key ids, primary first, in ring order.
    pub fn kids(&self) -> &[KeyId] {
        &self.order
    }

    /// The keys, primary first.
    pub fn keys(&self) -> impl Iterator<Item = &Arc<RingKey>> {
        self.keys.iter()
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Always false: a ring is never empty.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
}

/// A shared, atomically swappable [`KeyRing`].
///
/// The codec loads the ring once per seal or unseal: no lock, no
/// await. A writer (the rotation scheduler, or an operator) calls
/// [`RingHandle::store`] and in-flight readers keep the ring they loaded.
/// A handle made with [`RingHandle::empty`] holds no ring until the first
/// store: codecs then refuse to seal and reject every echo (fail closed).
///
/// ```
/// use stateseal::{KeyRing, RingHandle, Secret};
/// let handle = RingHandle::new(KeyRing::from_secrets(&[Secret::new(vec![1; 32])?])?);
/// let before = handle.current().unwrap().primary().kid();
/// handle.store(KeyRing::from_secrets(&[Secret::new(vec![2; 32])?])?);
/// assert_ne!(handle.current().unwrap().primary().kid(), before);
/// assert!(RingHandle::empty().current().is_none());
/// # Ok::<(), stateseal::Error>(())
/// ```
pub struct RingHandle {
    ring: ArcSwapOption<KeyRing>,
    /// Whether the ring held now carries revocations: the verify path's
    /// common case (none) is one relaxed load, not a ring load.
    revocations: AtomicBool,
}

impl std::fmt::Debug for RingHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RingHandle")
            .field("ring", &self.current().map(|r| r.kids().to_vec()))
            .finish()
    }
}

impl RingHandle {
    /// A handle holding `ring`.
    pub fn new(ring: KeyRing) -> Self {
        Self {
            revocations: AtomicBool::new(!ring.revocations().is_empty()),
            ring: ArcSwapOption::from_pointee(ring),
        }
    }

    /// A handle holding no ring yet (not ready).
    pub fn empty() -> Self {
        Self {
            ring: ArcSwapOption::empty(),
            revocations: AtomicBool::new(false),
        }
    }

    /// The current ring, if any, without touching its reference count (the
    /// codec's per-token path; hold it only for one operation).
    pub(crate) fn load(&self) -> Guard<Option<Arc<KeyRing>>> {
        self.ring.load()
    }

    /// The current ring as an owned `Arc`, if any.
    pub fn current(&self) -> Option<Arc<KeyRing>> {
        self.ring.load_full()
    }

    /// Replaces the ring; readers see the new one from their next `load`.
    pub fn store(&self, ring: KeyRing) {
        let revocations = !ring.revocations().is_empty();
        // Raised before a ring with revocations is seen, lowered after one
        // without is: no reader skips a list it could load.
        if revocations {
            self.revocations.store(true, Ordering::SeqCst);
        }
        self.ring.store(Some(Arc::new(ring)));
        if !revocations {
            self.revocations.store(false, Ordering::SeqCst);
        }
    }

    /// Whether the ring held now may carry revocations (false: it surely does not).
    pub(crate) fn may_revoke(&self) -> bool {
        self.revocations.load(Ordering::Relaxed)
    }

    /// Removes the ring: from now on nothing seals and every echo is rejected.
    pub fn clear(&self) {
        self.ring.store(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(b: u8) -> Secret {
        Secret::new(vec![b; 32]).unwrap()
    }

    #[test]
    fn errors_name_the_key() {
        assert_eq!(
            KeyRing::from_secrets(&[]).unwrap_err(),
            Error::Data(DataError::EmptyRing)
        );
        assert_eq!(
            KeyRing::from_secrets(&[s(1), s(2), s(1)]).unwrap_err(),
            Error::Data(DataError::DuplicateKey { index: 2 })
        );
    }

    #[test]
    fn lookup_and_order() {
        let ring = KeyRing::from_secrets(&[s(1), s(2)]).unwrap();
        let kids = ring.kids().to_vec();
        assert_eq!(kids[0], ring.primary().kid());
        assert!(ring.get(TokenFormat::V1, &kids[1]).is_some());
        assert!(
            ring.get(TokenFormat::V2, &kids[1]).is_none(),
            "a v1 key only"
        );
        assert!(ring.get(TokenFormat::V1, &KeyId([0, 0, 0, 0])).is_none());
        assert_eq!(ring.keys().count(), 2);
    }
}
