//! The unwrapped-key cache: KMS calls happen here, rarely, and never on the request path.
//!
//! Entries are unwrapped once (single-flight through moka, so concurrent
//! refreshes share one KMS call), re-unwrapped after `max_key_age` so a
//! revocation takes effect, kept through a KMS outage for `outage_grace`, and
//! dropped at once when the KMS denies a stale entry. Plaintext data keys live
//! only long enough to build the cipher; the `Secret` is wiped on drop.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use moka::future::Cache;

use crate::error::{Error, KeysetError};
use crate::key::RingKey;
use crate::keyset::{KeyEntry, Keyset};
use crate::provider::{ErrorClass, ProviderRegistry, WrapContext};

#[derive(Debug)]
pub(crate) struct CachedKey {
    pub(crate) key: Arc<RingKey>,
    pub(crate) unwrapped_at: f64,
}

/// What was unwrapped: the entry id and its wrapped bytes. An entry re-wrapped
/// under another KEK (or repaired by hand) is a new cache entry, so a stale
/// unwrap can never stand in for the bytes the document holds now.
type CacheKey = (String, Vec<u8>);

fn cache_key(e: &KeyEntry) -> CacheKey {
    (e.entry.clone(), e.wrapped.clone())
}

/// What happened to one entry during a refresh.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Outcome {
    Fresh,
    Unwrapped,
    KeptThroughOutage,
    /// The cached unwrap expired and could not be renewed.
    Dropped(ErrorClass, Arc<Error>),
    /// The entry could not be unwrapped at all.
    Unavailable(ErrorClass, Arc<Error>),
}

#[derive(Debug)]
pub(crate) struct KeyCache {
    cache: Cache<CacheKey, Arc<CachedKey>>,
    /// When each cached entry was unwrapped: what `retain` and
    /// `next_renewal` walk, every refresh (walking moka's own tables costs
    /// far more than the few entries a keyset has).
    unwrapped: Mutex<HashMap<CacheKey, f64>>,
    max_key_age: f64,
    outage_grace: f64,
    kms_calls: AtomicU64,
}

impl KeyCache {
    pub(crate) fn new(max_key_age: f64, outage_grace: f64) -> Self {
        Self {
            // A keyset holds at most MAX_ENTRIES keys: never evicted, and sized
            // small (a fleet simulation holds thousands of these).
            cache: Cache::builder()
                .max_capacity(2 * crate::keyset::MAX_ENTRIES as u64)
                .initial_capacity(8)
                .build(),
            unwrapped: Mutex::new(HashMap::new()),
            max_key_age,
            outage_grace,
            kms_calls: AtomicU64::new(0),
        }
    }

    pub(crate) fn kms_calls(&self) -> u64 {
        self.kms_calls.load(Ordering::Relaxed)
    }

    /// When the first cached unwrap of an entry in `ring` falls due for
    /// renewal (`max_key_age`); unwraps of entries out of the ring (retired,
    /// not yet pruned) are never renewed.
    pub(crate) fn next_renewal(&self, ring: &[String]) -> Option<f64> {
        self.index()
            .iter()
            .filter(|(k, _)| ring.contains(&k.0))
            .map(|(_, at)| at + self.max_key_age)
            .reduce(f64::min)
    }

    fn index(&self) -> std::sync::MutexGuard<'_, HashMap<CacheKey, f64>> {
        self.unwrapped
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    async fn unwrap(
        &self,
        registry: &ProviderRegistry,
        keyset_id: &str,
        e: &KeyEntry,
    ) -> Result<Arc<RingKey>, Error> {
        let provider = registry.provider_for(&e.kek)?;
        self.kms_calls.fetch_add(1, Ordering::Relaxed);
        let ctx = WrapContext {
            keyset_id,
            entry_id: &e.entry,
        };
        let result = provider.unwrap(&e.kek, &e.wrapped, ctx).await;
        let outcome = match &result {
            Ok(_) => "ok".to_owned(),
            Err(err) => err
                .kms_class()
                .map_or("error".to_owned(), |c| c.to_string()),
        };
        metrics::counter!("stateseal_kms_calls_total", "provider" => provider.scheme(), "op" => "unwrap", "outcome" => outcome)
            .increment(1);
        let key = RingKey::with_format(&result?, e.alg);
        // A re-wrap is only the same entry if it holds the same key.
        if let Some(recorded) = e.kid
            && recorded != key.kid()
        {
            return Err(Error::Keyset(KeysetError::Invalid {
                field: format!("entry {}", e.entry),
                problem: format!(
                    "unwraps to key id {}, but the document records {recorded}; not using it",
                    key.kid()
                ),
            }));
        }
        Ok(Arc::new(key))
    }

    /// The prepared key for `e` at `now`, unwrapping when needed.
    pub(crate) async fn get(
        &self,
        registry: &ProviderRegistry,
        doc: &Keyset,
        e: &KeyEntry,
        now: f64,
    ) -> (Option<Arc<RingKey>>, Outcome) {
        let key = cache_key(e);
        let cached = self.cache.get(&key).await;
        match cached {
            Some(c) if now - c.unwrapped_at < self.max_key_age => {
                (Some(c.key.clone()), Outcome::Fresh)
            }
            Some(c) => match self.unwrap(registry, &doc.id, e).await {
                Ok(k) => {
                    // Same entry, same key: keep the prepared key so its seal count carries on.
                    let key = if k.kid() == c.key.kid() {
                        c.key.clone()
                    } else {
                        k
                    };
                    self.insert(e, key.clone(), now).await;
                    (Some(key), Outcome::Unwrapped)
                }
                Err(err) => {
                    let class = err.kms_class().unwrap_or(ErrorClass::Config);
                    if class == ErrorClass::Transient
                        && now - c.unwrapped_at < self.max_key_age + self.outage_grace
                    {
                        tracing::warn!(entry = %e.entry, error = %err, "KMS unavailable; serving the cached key within outage_grace");
                        (Some(c.key.clone()), Outcome::KeptThroughOutage)
                    } else {
                        tracing::warn!(entry = %e.entry, error = %err, "dropping key: its cached unwrap expired and the KMS refused to renew it");
                        self.index().remove(&key);
                        self.cache.invalidate(&key).await;
                        (None, Outcome::Dropped(class, Arc::new(err)))
                    }
                }
            },
            None => {
                let loaded = self
                    .cache
                    .try_get_with(key.clone(), async {
                        let key = self.unwrap(registry, &doc.id, e).await?;
                        // Re-wrapped, same key: keep the prepared key so its seal count carries on.
                        let key = self
                            .cache
                            .iter()
                            .find(|(k, c)| k.0 == e.entry && c.key.kid() == key.kid())
                            .map_or(key, |(_, c)| c.key.clone());
                        Ok::<_, Error>(Arc::new(CachedKey {
                            key,
                            unwrapped_at: now,
                        }))
                    })
                    .await;
                match loaded {
                    Ok(c) => {
                        self.index().insert(key, c.unwrapped_at);
                        (Some(c.key.clone()), Outcome::Unwrapped)
                    }
                    Err(err) => {
                        tracing::warn!(entry = %e.entry, error = %err, "cannot unwrap key");
                        let class = err.kms_class().unwrap_or(ErrorClass::Config);
                        (None, Outcome::Unavailable(class, err))
                    }
                }
            }
        }
    }

    async fn insert(&self, e: &KeyEntry, key: Arc<RingKey>, now: f64) {
        self.index().insert(cache_key(e), now);
        self.cache
            .insert(
                cache_key(e),
                Arc::new(CachedKey {
                    key,
                    unwrapped_at: now,
                }),
            )
            .await;
    }

    /// Forgets unwraps of entries no longer in the document, or no longer wrapped as it says.
    pub(crate) async fn retain(&self, doc: &Keyset) {
        let stale: Vec<CacheKey> = {
            let mut index = self.index();
            let stale: Vec<CacheKey> = index
                .keys()
                .filter(|(entry, wrapped)| doc.entry(entry).is_none_or(|e| &e.wrapped != wrapped))
                .cloned()
                .collect();
            for k in &stale {
                index.remove(k);
            }
            stale
        };
        for k in stale {
            self.cache.invalidate(&k).await;
        }
    }
}
