//! `RotationScheduler`: polls the keyset store, unwraps keys through the
//! provider registry, swaps the ring, and rotates on demand, by age or by seal count.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::Notify;

mod refresh_loop;
mod rotations;

use std::collections::BTreeSet;

use super::admission::{Refusal, admit};
use super::cache::{KeyCache, Outcome};
use super::config::SchedulerConfig;
use super::newest::write_keyset;
use super::operations::load_existing;
use super::reservations::Reservations;
use super::timeline::{Phase, next_change_after, ring_at};
use super::trust::{KeysetTrust, VerifiedKeyset};
use crate::clock::{Clock, SystemClock};
use crate::error::Error;
use crate::key::{RingKey, TokenFormat};
use crate::keyset::{Keyset, KeysetStore, StoredKeyset};
use crate::provider::ProviderRegistry;
use crate::ring::{KeyRing, RingHandle};

/// What an instance knows about its ring, for `status`, readiness and metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct SchedulerStatus {
    /// Whether a ring has ever been loaded (the boundary fails closed until then).
    pub ready: bool,
    /// Generation of the document the current ring came from.
    pub generation: Option<u64>,
    /// The rotation phase at the last refresh.
    pub phase: Option<Phase>,
    /// Key ids of the current ring, primary first (hex).
    pub ring: Vec<String>,
    /// Unix seconds of the last successful refresh.
    pub last_refresh: Option<f64>,
    /// Unix seconds of the last time the store yielded a document this instance adopted.
    pub last_store_read: Option<f64>,
    /// The last refresh error, if the last refresh failed.
    pub last_error: Option<String>,
    /// KMS calls made by this instance so far.
    pub kms_calls: u64,
    /// Whether the adopted document is an unauthenticated `stateseal.keyset/v1`
    /// one (accepted by `accept_unauthenticated_keyset`).
    pub unauthenticated: bool,
    /// When the adopted document goes stale (Unix seconds; `None` for v1).
    pub expires_at: Option<f64>,
}

struct Inner {
    store: Arc<dyn KeysetStore>,
    registry: ProviderRegistry,
    ring: Arc<RingHandle>,
    clock: Arc<dyn Clock>,
    config: SchedulerConfig,
    trust: KeysetTrust,
    cache: KeyCache,
    refresh_lock: tokio::sync::Mutex<()>,
    /// The last document adopted: the ring is recomputed from it on every tick,
    /// and it is the watermark that older or foreign documents are refused against.
    adopted: Mutex<Option<VerifiedKeyset>>,
    /// Entries this instance saw leave the document: they never come back.
    pruned: Mutex<BTreeSet<String>>,
    /// Entry id of the primary key of the ring installed last.
    primary_entry: Mutex<Option<String>>,
    reservations: Reservations,
    status: Mutex<SchedulerStatus>,
    wake: Notify,
    early_requested: AtomicBool,
    last_early_ms: AtomicU64,
}

/// Keeps one instance's [`RingHandle`] in step with the shared keyset.
///
/// Every network call (store and KMS) happens here, off the request path.
/// Tests drive it with [`RotationScheduler::refresh_at`] and simulated time;
/// servers call [`RotationScheduler::spawn`].
#[derive(Clone)]
pub struct RotationScheduler {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for RotationScheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RotationScheduler")
            .field("store", &self.inner.store.uri())
            .field("status", &self.status())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl RotationScheduler {
    /// A scheduler for `store`, unwrapping through `registry`, swapping `ring`.
    ///
    /// # Errors
    /// [`Error::Config`] when `config` is invalid, or names no pins for a
    /// store other than `file://`.
    pub fn new(
        config: SchedulerConfig,
        store: Arc<dyn KeysetStore>,
        registry: ProviderRegistry,
        ring: Arc<RingHandle>,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, Error> {
        config.validate()?;
        config.trust.check_for_store(store.uri())?;
        let inner = Arc::new(Inner {
            cache: KeyCache::new(config.max_key_age, config.outage_grace),
            trust: KeysetTrust::new(config.trust.clone()),
            store,
            registry,
            ring,
            clock,
            config,
            refresh_lock: tokio::sync::Mutex::new(()),
            adopted: Mutex::new(None),
            pruned: Mutex::new(BTreeSet::new()),
            primary_entry: Mutex::new(None),
            reservations: Reservations::default(),
            status: Mutex::new(SchedulerStatus {
                ready: false,
                generation: None,
                phase: None,
                ring: Vec::new(),
                last_refresh: None,
                last_store_read: None,
                last_error: None,
                kms_calls: 0,
                unauthenticated: false,
                expires_at: None,
            }),
            wake: Notify::new(),
            early_requested: AtomicBool::new(false),
            last_early_ms: AtomicU64::new(0),
        });
        let weak: Weak<Inner> = Arc::downgrade(&inner);
        inner.ring.set_miss_hook(move || {
            if let Some(inner) = weak.upgrade() {
                inner.request_early_refresh();
            }
        });
        Ok(Self { inner })
    }

    /// A scheduler on the system clock with a fresh, empty ring handle.
    ///
    /// # Errors
    /// As [`RotationScheduler::new`].
    pub fn with_defaults(
        config: SchedulerConfig,
        store: Arc<dyn KeysetStore>,
        registry: ProviderRegistry,
    ) -> Result<Self, Error> {
        Self::new(
            config,
            store,
            registry,
            Arc::new(RingHandle::empty()),
            Arc::new(SystemClock),
        )
    }

    /// The ring handle this scheduler swaps (give it to the codec).
    pub fn ring(&self) -> Arc<RingHandle> {
        self.inner.ring.clone()
    }

    /// Whether a ring is loaded.
    pub fn is_ready(&self) -> bool {
        lock(&self.inner.status).ready
    }

    /// A snapshot of this instance's state.
    pub fn status(&self) -> SchedulerStatus {
        let mut s = lock(&self.inner.status).clone();
        s.kms_calls = self.kms_calls();
        s
    }

    /// KMS calls made so far (steady-state traffic makes none).
    pub fn kms_calls(&self) -> u64 {
        self.inner.cache.kms_calls() + self.inner.trust.kms_calls()
    }

    /// Whether an unknown key id asked for an early refresh since the last call (clears it).
    pub fn take_early_refresh_request(&self) -> bool {
        self.inner.early_requested.swap(false, Ordering::SeqCst)
    }

    /// Refreshes now (system or injected clock).
    ///
    /// # Errors
    /// As [`RotationScheduler::refresh_at`].
    pub async fn refresh(&self) -> Result<SchedulerStatus, Error> {
        self.refresh_at(self.inner.clock.now()).await
    }

    /// Loads the document, unwraps what is new or stale, computes the ring at
    /// `now`, swaps it in, and rotates if the primary is due.
    ///
    /// When the store cannot be read, or holds a document this instance refuses
    /// (unauthentic, unpinned, stale, an older generation, another keyset, an
    /// entry moved the wrong way), the ring is still
    /// recomputed at `now` from the last adopted document, so activations,
    /// retirements and the key-cache rules go on; once the store has been
    /// unusable for longer than `max_store_staleness`, the ring is cleared.
    ///
    /// # Errors
    /// Store errors, [`Error::KeysetRefused`], or [`Error::KeysUnavailable`]
    /// when no key can seal (the ring is then cleared: fail closed).
    pub async fn refresh_at(&self, now: f64) -> Result<SchedulerStatus, Error> {
        let result = self.refresh_inner(now).await;
        self.record_refresh(now, result.as_ref().err());
        self.maybe_auto_rotate(&result?, now).await;
        Ok(self.status())
    }

    fn record_refresh(&self, now: f64, error: Option<&Error>) {
        let mut st = lock(&self.inner.status);
        match error {
            None => {
                st.last_refresh = Some(now);
                st.last_error = None;
            }
            Some(e) => {
                tracing::warn!(store = %self.inner.store.uri(), error = %e, "keyset refresh failed");
                st.last_error = Some(e.to_string());
            }
        }
        if let Some(last) = st.last_refresh {
            metrics::gauge!("stateseal_seconds_since_refresh").set(now - last);
        }
    }

    /// Reads the store and swaps in the ring for `now`; returns the document
    /// adopted by this refresh.
    async fn refresh_inner(&self, now: f64) -> Result<Keyset, Error> {
        let inner = &self.inner;
        let _guard = inner.refresh_lock.lock().await;
        let uri = inner.store.uri();
        let candidate = match load_existing(inner.store.as_ref()).await {
            Ok(stored) => self.accept(&stored, now).await,
            Err(Error::Keyset { field, problem }) => {
                Err(Refusal::Invalid.record(uri, format!("{field}: {problem}")))
            }
            Err(e) => Err(e),
        };
        let problem = match candidate {
            Ok(verified) => match self.install(&verified.doc, now).await {
                Err(Error::DuplicateKey { index }) => Refusal::DuplicateKey.record(
                    uri,
                    format!(
                        "generation {}: the key of its entry {index} duplicates another entry's",
                        verified.doc.generation
                    ),
                ),
                result => {
                    self.adopt(&verified);
                    lock(&inner.status).last_store_read = Some(now);
                    result?;
                    self.write_if_due(&verified, now).await;
                    return Ok(verified.doc);
                }
            },
            Err(e) => e,
        };
        // The store gave nothing usable: the last adopted document still says what the ring is now.
        let Some(adopted) = lock(&inner.adopted).as_ref().map(|v| v.doc.clone()) else {
            return Err(problem);
        };
        let since = lock(&inner.status).last_store_read.unwrap_or(now);
        let limit = inner.config.store_staleness_limit();
        if now - since > limit {
            self.fail_closed();
            return Err(Error::Store {
                uri: uri.to_owned(),
                problem: format!(
                    "no usable keyset document for {:.0}s, longer than max_store_staleness ({limit}s); not sealing until the store recovers (last problem: {problem})",
                    now - since
                ),
            });
        }
        // KeysUnavailable here is already in effect (ring cleared); the store problem is the news.
        let _ = self.install(&adopted, now).await;
        Err(problem)
    }

    /// The stored document, verified (`trust`), admitted against the one
    /// adopted last, with its re-wraps proven: what this instance may adopt.
    async fn accept(&self, stored: &StoredKeyset, now: f64) -> Result<VerifiedKeyset, Error> {
        let inner = &self.inner;
        let verified = inner
            .trust
            .open(&inner.registry, inner.store.uri(), stored, now)
            .await?;
        let adopted = self.adopted_doc();
        self.vet_against(adopted.as_ref(), &verified.doc, now)?;
        if let Some(adopted) = &adopted {
            self.check_rewraps(adopted, &verified.doc).await?;
        }
        Ok(verified)
    }

    /// A copy of the document adopted last (released before any await).
    fn adopted_doc(&self) -> Option<Keyset> {
        lock(&self.inner.adopted).as_ref().map(|v| v.doc.clone())
    }

    /// Admission of `doc` against the document adopted last (see `admission`).
    pub(super) fn vet(&self, doc: &Keyset, now: f64) -> Result<(), Error> {
        self.vet_against(self.adopted_doc().as_ref(), doc, now)
    }

    fn vet_against(&self, adopted: Option<&Keyset>, doc: &Keyset, now: f64) -> Result<(), Error> {
        let inner = &self.inner;
        let pruned = lock(&inner.pruned).clone();
        admit(adopted, doc, &inner.config.timing, now, &pruned)
            .map_err(|(refusal, detail)| refusal.record(inner.store.uri(), detail))
    }

    /// An entry re-wrapped since the adopted document (new KEK or wrapped
    /// bytes) is admitted only if it unwraps to the key id it records (which
    /// admission already holds to the adopted one): one KMS call per re-wrap.
    async fn check_rewraps(&self, adopted: &Keyset, doc: &Keyset) -> Result<(), Error> {
        let inner = &self.inner;
        for e in &doc.keys {
            let Some(before) = adopted.entry(&e.entry) else {
                continue;
            };
            if before.kek == e.kek && before.wrapped == e.wrapped {
                continue;
            }
            match super::proof::unwrap_entry(doc, e, &inner.registry).await {
                Ok(_) => {}
                Err(Error::Keyset { problem, .. }) => {
                    return Err(Refusal::KeyChanged.record(
                        inner.store.uri(),
                        format!(
                            "generation {}: entry {} was re-wrapped to another key: {problem}",
                            doc.generation, e.entry
                        ),
                    ));
                }
                // The KMS could not say (an outage): not adopted now, tried again at the next refresh.
                Err(other) => return Err(other),
            }
        }
        Ok(())
    }

    /// Makes `verified` the watermark; entries it dropped are remembered as pruned.
    fn adopt(&self, verified: &VerifiedKeyset) {
        let inner = &self.inner;
        let mut adopted = lock(&inner.adopted);
        if let Some(previous) = adopted.as_ref() {
            let mut pruned = lock(&inner.pruned);
            for e in &previous.doc.keys {
                if verified.doc.entry(&e.entry).is_none() {
                    pruned.insert(e.entry.clone());
                }
            }
        }
        *adopted = Some(verified.clone());
        let unauthenticated = !verified.is_authenticated();
        metrics::gauge!("stateseal_keyset_unauthenticated")
            .set(f64::from(u8::from(unauthenticated)));
        if let Some(at) = verified.expires_at {
            metrics::gauge!("stateseal_keyset_expires_at_seconds").set(at);
        }
        let mut st = lock(&inner.status);
        st.unauthenticated = unauthenticated;
        st.expires_at = verified.expires_at;
    }

    /// Writes the next generation of `verified` (tagged under its MAC key) when
    /// this process's seal reservation runs low (see `reservations`) or the
    /// document has less than half its validity left (`renew_keyset`). A failed
    /// write is logged and tried again at the next refresh; sealing goes on.
    async fn write_if_due(&self, verified: &VerifiedKeyset, now: f64) {
        let inner = &self.inner;
        let doc = &verified.doc;
        let mut next = doc.clone();
        let reservation = self.reservation_due(&mut next);
        let renewal =
            inner.config.renew_keyset && verified.renewal_due(now, inner.config.keyset_validity);
        if reservation.is_none() && !renewal {
            return;
        }
        if !verified.is_authenticated() {
            // Nothing writes an unauthenticated document; `stateseal keyset upgrade` converts it.
            return;
        }
        let written = async {
            next.generation = doc.next_generation()?;
            let stored = verified.seal_next(&next, now + inner.config.keyset_validity)?;
            write_keyset(&*inner.store, Some(doc.generation), &stored).await
        }
        .await;
        let reserving = reservation.is_some();
        match (written, reservation) {
            (Ok(()), Some((entry, amount, reserved))) => {
                // The next refresh loads the new generation like any other write.
                inner.reservations.granted(&entry, amount);
                if let Some(ring) = inner.ring.current() {
                    self.limit_seals(ring.primary(), &entry);
                }
                metrics::gauge!("stateseal_primary_key_seals_reserved").set(reserved as f64);
            }
            (Ok(()), None) => {
                metrics::counter!("stateseal_keyset_renewals_total").increment(1);
            }
            (Err(e), _) => {
                metrics::counter!("stateseal_keyset_write_failures_total").increment(1);
                if reserving {
                    metrics::counter!("stateseal_seal_reservation_failures_total").increment(1);
                }
                tracing::warn!(store = %inner.store.uri(), error = %e, "could not write the keyset (seal reservation or renewal); sealing goes on, the next refresh tries again");
            }
        }
    }

    /// Sets the seal budget of `key`, the primary of `entry`: a `v1.` key may
    /// seal what this process reserved under the entry plus one block, and
    /// then stops until a reservation lands (a process that cannot write the
    /// keyset gets the one block). `v2.` keys, and every key with
    /// reservations off, have no budget.
    fn limit_seals(&self, key: &RingKey, entry: &str) {
        let limit = match self.inner.config.seal_reservation_block {
            Some(block) if key.format() == TokenFormat::V1 => self
                .inner
                .reservations
                .granted_under(entry)
                .saturating_add(block),
            _ => u64::MAX,
        };
        key.set_seal_limit(limit);
    }

    /// Adds this process's next seal reservation to `next` when one is due:
    /// (entry, amount, new total).
    fn reservation_due(&self, next: &mut Keyset) -> Option<(String, u64, u64)> {
        let inner = &self.inner;
        let min_block = inner.config.seal_reservation_block?;
        inner
            .reservations
            .retain(|entry| next.entry(entry).is_some());
        let entry = lock(&inner.primary_entry).clone()?;
        let e = next.keys.iter_mut().find(|e| e.entry == entry)?;
        // Only v1 keys carry a seal budget.
        if e.alg != TokenFormat::V1 {
            return None;
        }
        let used = inner.ring.current().map(|r| r.primary().seal_count())?;
        let amount = inner.reservations.due(&entry, used, min_block)?;
        e.seals_reserved = e.seals_reserved.saturating_add(amount);
        Some((entry, amount, e.seals_reserved))
    }

    fn fail_closed(&self) {
        self.inner.ring.clear();
        metrics::gauge!("stateseal_ready").set(0.0);
        let mut st = lock(&self.inner.status);
        st.ready = false;
        st.ring.clear();
    }

    /// Computes the ring of `doc` at `now` (unwrapping through the cache) and swaps it in.
    async fn install(&self, doc: &Keyset, now: f64) -> Result<(), Error> {
        let inner = &self.inner;
        inner.cache.retain(doc).await;
        let plan = ring_at(doc, now);
        let mut keys = Vec::new();
        let mut primary = None;
        let mut first_problem = None;
        for entry_id in plan.iter().flat_map(|p| p.ring.iter()) {
            let Some(e) = doc.entry(entry_id) else {
                continue;
            };
            let (key, outcome) = inner.cache.get(&inner.registry, doc, e, now).await;
            if let Outcome::Dropped(c, err) | Outcome::Unavailable(c, err) = outcome {
                metrics::counter!("stateseal_key_unavailable_total", "class" => c.to_string())
                    .increment(1);
                first_problem.get_or_insert_with(|| format!("entry {}: {err}", e.entry));
            }
            let Some(key) = key else { continue };
            // The planned primary, or failing that the newest active key we hold.
            let planned = plan.as_ref().is_some_and(|p| p.primary == e.entry);
            if primary.is_none() && (planned || e.activate_at <= now) {
                primary = Some((keys.len(), e.entry.clone()));
            }
            keys.push(key);
        }
        let Some((p, primary_entry)) = primary else {
            // No key can seal: fail closed rather than keep a ring that no longer matches the keyset.
            self.fail_closed();
            return Err(Error::KeysUnavailable(
                first_problem.unwrap_or_else(|| "every key has retired".to_owned()),
            ));
        };
        keys.swap(0, p);
        let ring = KeyRing::from_keys(keys)?;
        self.limit_seals(ring.primary(), &primary_entry);
        *lock(&inner.primary_entry) = Some(primary_entry);
        let kids: Vec<String> = ring.kids().iter().map(|k| k.to_hex()).collect();
        let phase = plan.as_ref().map(|p| p.phase);
        if let Some(e) = plan.as_ref().and_then(|p| doc.entry(&p.primary)) {
            metrics::gauge!("stateseal_primary_key_age_seconds").set(now - e.activate_at);
        }
        inner.ring.store(ring);
        metrics::gauge!("stateseal_ring_generation").set(doc.generation as f64);
        metrics::gauge!("stateseal_rotation_phase").set(phase.map_or(0.0, |p| p as u8 as f64));
        // How long the current phase has left (0 with nothing scheduled): a phase
        // that should have ended shows as a generation that never changes while this stays 0.
        let to_next = next_change_after(doc, now).map_or(0.0, |(at, _)| (at - now).max(0.0));
        metrics::gauge!("stateseal_seconds_to_next_phase").set(to_next);
        metrics::gauge!("stateseal_max_seals_per_key").set(inner.config.max_seals_per_key as f64);
        metrics::gauge!("stateseal_ready").set(1.0);
        let mut st = lock(&inner.status);
        st.ready = true;
        st.generation = Some(doc.generation);
        st.phase = phase;
        st.ring = kids;
        Ok(())
    }
}
