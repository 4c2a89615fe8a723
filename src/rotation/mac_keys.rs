//! The MAC keys a verifier holds, and the MAC key references a KMS refused.
//!
//! A document names its MAC key by reference (KEK and wrapped bytes); only the
//! KMS can turn a reference into a key, and a store writer can put any bytes
//! there. So a verifier keeps the few keys it unwrapped (a fleet's documents
//! name one, and a re-keyed keyset briefly two), and remembers references the
//! KMS refused for a while: a junk reference costs one KMS call per
//! [`REFUSAL_HOLD`], however often it is rewritten, and a KMS error that was
//! misclassified as a refusal (a proxy's 4xx) locks nothing out for longer. A
//! reference that unwrapped before is never held as refused.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use sha2::{Digest, Sha256};

use crate::keyset::{MacKey, MacKeyRef};

/// How long a refused reference is not asked about again (seconds).
pub(crate) const REFUSAL_HOLD: f64 = 300.0;
/// Keys kept: the current one and one more (a keyset re-keyed, a foreign copy).
const KEPT_KEYS: usize = 4;
/// Refused references remembered (by digest: a wrapped key may be large).
const KEPT_REFUSALS: usize = 16;

struct Kept {
    keyset_id: String,
    r: MacKeyRef,
    key: Arc<MacKey>,
}

struct Refused {
    keyset_id: String,
    kek: String,
    digest: [u8; 32],
    until: f64,
}

fn digest(wrapped: &[u8]) -> [u8; 32] {
    Sha256::digest(wrapped).into()
}

/// Unwrapped MAC keys and refused references, both bounded (newest last).
#[derive(Default)]
pub(crate) struct MacKeys {
    kept: Mutex<VecDeque<Kept>>,
    refused: Mutex<VecDeque<Refused>>,
}

impl MacKeys {
    /// The key `r` unwrapped to for `keyset_id`, if held.
    pub(crate) fn get(&self, keyset_id: &str, r: &MacKeyRef) -> Option<Arc<MacKey>> {
        let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.iter()
            .find(|k| k.keyset_id == keyset_id && &k.r == r)
            .map(|k| k.key.clone())
    }

    /// Holds the key `r` unwrapped to.
    pub(crate) fn keep(&self, keyset_id: &str, r: &MacKeyRef, key: Arc<MacKey>) {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.retain(|k| !(k.keyset_id == keyset_id && &k.r == r));
        if kept.len() == KEPT_KEYS {
            kept.pop_front();
        }
        kept.push_back(Kept {
            keyset_id: keyset_id.to_owned(),
            r: r.clone(),
            key,
        });
    }

    /// Whether the KMS refused `r` for `keyset_id` less than [`REFUSAL_HOLD`] before `now`.
    pub(crate) fn refused(&self, keyset_id: &str, r: &MacKeyRef, now: f64) -> bool {
        let d = digest(&r.wrapped);
        let refused = self.refused.lock().unwrap_or_else(PoisonError::into_inner);
        refused
            .iter()
            .any(|x| x.keyset_id == keyset_id && x.kek == r.kek && x.digest == d && now < x.until)
    }

    /// Remembers that the KMS refused `r` at `now`, unless `r` unwrapped before.
    pub(crate) fn refuse(&self, keyset_id: &str, r: &MacKeyRef, now: f64) {
        if self.get(keyset_id, r).is_some() {
            return;
        }
        let d = digest(&r.wrapped);
        let mut refused = self.refused.lock().unwrap_or_else(PoisonError::into_inner);
        refused.retain(|x| !(x.keyset_id == keyset_id && x.kek == r.kek && x.digest == d));
        if refused.len() == KEPT_REFUSALS {
            refused.pop_front();
        }
        refused.push_back(Refused {
            keyset_id: keyset_id.to_owned(),
            kek: r.kek.clone(),
            digest: d,
            until: now + REFUSAL_HOLD,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Secret;

    fn reference(byte: u8) -> MacKeyRef {
        MacKeyRef {
            kek: "local:///k".into(),
            wrapped: vec![byte; 40],
        }
    }

    #[test]
    fn a_refusal_is_held_for_a_while_and_never_for_a_key_that_unwrapped() {
        let keys = MacKeys::default();
        keys.refuse("ks_a", &reference(1), 100.0);
        assert!(keys.refused("ks_a", &reference(1), 100.0 + REFUSAL_HOLD - 1.0));
        assert!(
            !keys.refused("ks_a", &reference(1), 100.0 + REFUSAL_HOLD),
            "asked again"
        );
        assert!(
            !keys.refused("ks_b", &reference(1), 100.0),
            "another keyset"
        );
        assert!(
            !keys.refused("ks_a", &reference(2), 100.0),
            "another reference"
        );
        let key = Arc::new(MacKey::from_secret(&Secret::generate().expect("key")).expect("mac"));
        keys.keep("ks_a", &reference(3), key);
        keys.refuse("ks_a", &reference(3), 100.0);
        assert!(
            !keys.refused("ks_a", &reference(3), 100.0),
            "it unwrapped before"
        );
        assert!(keys.get("ks_a", &reference(3)).is_some());
    }

    #[test]
    fn both_memories_are_bounded() {
        let keys = MacKeys::default();
        for i in 0..=KEPT_REFUSALS as u8 {
            keys.refuse("ks_a", &reference(i), 0.0);
        }
        assert!(!keys.refused("ks_a", &reference(0), 1.0), "the oldest went");
        assert!(keys.refused("ks_a", &reference(KEPT_REFUSALS as u8), 1.0));
        for i in 0..=KEPT_KEYS as u8 {
            let key =
                Arc::new(MacKey::from_secret(&Secret::generate().expect("key")).expect("mac"));
            keys.keep("ks_a", &reference(100 + i), key);
        }
        assert!(
            keys.get("ks_a", &reference(100)).is_none(),
            "the oldest went"
        );
        assert!(
            keys.get("ks_a", &reference(100 + KEPT_KEYS as u8))
                .is_some()
        );
    }
}
