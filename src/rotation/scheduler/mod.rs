//! `RotationScheduler`: polls the keyset store, unwraps keys through the
//! provider registry, swaps the ring, and rotates on demand, by age or by seal count.

use std::sync::{Arc, Mutex};

mod adoption;
mod refresh_loop;
mod rotations;
mod writes;

pub use refresh_loop::RefreshPacing;
pub(crate) use refresh_loop::unit_draw;
pub use rotations::CLAIM_TTL;

use std::collections::BTreeSet;

use super::cache::{KeyCache, Outcome};
use super::config::SchedulerConfig;
use super::reservations::Reservations;
use super::timeline::{Phase, next_change_after, ring_at};
use super::trust::{KeysetTrust, VerifiedKeyset};
use crate::clock::UnixTime;
use crate::clock::{Clock, SystemClock};
use crate::error::{DataError, Error, KeysetRefusal};
use crate::keyset::{Keyset, KeysetStore, StoreVersion};
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
    /// When the last successful refresh ran.
    pub last_refresh: Option<UnixTime>,
    /// The last time the store yielded a document this instance adopted.
    pub last_store_read: Option<UnixTime>,
    /// The last refresh error, if the last refresh failed.
    pub last_error: Option<String>,
    /// KMS calls made by this instance so far.
    pub kms_calls: u64,
    /// Whether the adopted document is an unauthenticated `stateseal.keyset/v1`
    /// one (accepted by `accept_unauthenticated_keyset`).
    pub unauthenticated: bool,
    /// When the adopted document goes stale (`None` for v1).
    pub expires_at: Option<UnixTime>,
}

/// When a refresh that finds the keyset document unchanged could next do
/// more than confirm it ([`RotationScheduler::next_event_at`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NextEvent {
    /// Every refresh may matter: no document adopted yet, or a `v1.`
    /// primary with seal reservations, whose writes follow traffic.
    EveryRefresh,
    /// Not before this instant.
    At(UnixTime),
    /// Nothing is ahead: the document never changes the ring by itself.
    Never,
}

impl NextEvent {
    /// Whether a refresh at `now` could do more than confirm an unchanged
    /// document.
    ///
    /// ```
    /// use stateseal::UnixTime;
    /// use stateseal::rotation::NextEvent;
    /// let at = UnixTime::from_secs(1_782_345_600);
    /// assert!(NextEvent::EveryRefresh.is_due(at));
    /// assert!(NextEvent::At(at).is_due(at));
    /// assert!(!NextEvent::At(at).is_due(UnixTime::from_secs(1_782_345_599)));
    /// assert!(!NextEvent::Never.is_due(at));
    /// ```
    pub fn is_due(self, now: UnixTime) -> bool {
        match self {
            Self::EveryRefresh => true,
            Self::At(at) => now >= at,
            Self::Never => false,
        }
    }
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
    /// The store's version of the adopted document: what the next
    /// conditional read names.
    seen: Mutex<Option<StoreVersion>>,
    /// Entries this instance saw leave the document: they never come back.
    pruned: Mutex<BTreeSet<String>>,
    /// Entry id of the primary key of the ring installed last.
    primary_entry: Mutex<Option<String>>,
    reservations: Reservations,
    status: Mutex<SchedulerStatus>,
    /// This instance's name in rotation claims and rendezvous hashing.
    instance_id: String,
    /// The generation found behind the store's newest copy (a restored
    /// backup), so that it is not read and refused again at every refresh.
    behind_newest: Mutex<Option<(u64, f64)>>,
    /// The store version of the last document refused, with its refusal: the
    /// next conditional read names it, so an unchanged junk document costs a
    /// read answered "unchanged" and no KMS call.
    /// (version, reason, detail, judged again at).
    refused: Mutex<Option<(StoreVersion, KeysetRefusal, String, f64)>>,
    /// After the store refused a seal reservation: when to try again, and
    /// how many refusals in a row.
    reservation_backoff: Mutex<Option<(String, f64, u32)>>,
}

/// Keeps one instance's [`RingHandle`] in step with the shared keyset.
///
/// Every network call (store and KMS) happens here, off the request path.
/// Nothing a request carries makes it call out: a token naming an unknown
/// key id is rejected without a store read (the timeline publishes every key
/// before it seals, so an instance that keeps its refresh pace knows it).
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
        let bound = config.timing.propagation.saturating_mul(2);
        if let Some(limit) = config.max_store_staleness.filter(|&s| s > bound) {
            tracing::warn!(
                max_store_staleness = limit.as_secs_f64(),
                bound = bound.as_secs_f64(),
                "max_store_staleness is above 2P: an instance cut off from the store may seal with a key the fleet has retired, and those states are rejected elsewhere"
            );
        }
        let instance_id = match &config.instance_id {
            Some(id) => id.clone(),
            None => crate::keyset::random_id("i_")?,
        };
        let inner = Arc::new(Inner {
            instance_id,
            cache: KeyCache::new(
                config.max_key_age.as_secs_f64(),
                config.outage_grace.as_secs_f64(),
            ),
            trust: KeysetTrust::new(config.trust.clone()),
            store,
            registry,
            ring,
            clock,
            config,
            refresh_lock: tokio::sync::Mutex::new(()),
            adopted: Mutex::new(None),
            seen: Mutex::new(None),
            pruned: Mutex::new(BTreeSet::new()),
            primary_entry: Mutex::new(None),
            reservations: Reservations::default(),
            behind_newest: Mutex::new(None),
            refused: Mutex::new(None),
            reservation_backoff: Mutex::new(None),
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

    /// The id of the keyset document adopted last (`None` before the first).
    pub fn keyset_id(&self) -> Option<String> {
        lock(&self.inner.adopted).as_ref().map(|v| v.doc.id.clone())
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

    /// The earliest time at which a refresh that finds the document
    /// unchanged could do more than confirm it: the ring's next change (an
    /// activation, a retirement), a cached key due for renewal
    /// (`max_key_age`), the document going stale, this instance's turn to
    /// renew the document or to claim a rotation by age. Before it, such a
    /// refresh changes nothing but the time of the last read, so a fleet
    /// simulation may skip it.
    pub fn next_event_at(&self) -> NextEvent {
        let inner = &self.inner;
        let Some(verified) = lock(&inner.adopted).clone() else {
            return NextEvent::EveryRefresh;
        };
        let doc = &verified.doc;
        let Some(now) = lock(&inner.status).last_refresh.map(UnixTime::as_secs_f64) else {
            return NextEvent::EveryRefresh;
        };
        let plan = ring_at(doc, now);
        let primary = plan.as_ref().and_then(|p| doc.entry(&p.primary));
        if inner.config.seal_reservation_block.is_some()
            && primary.is_some_and(|e| e.alg == crate::key::TokenFormat::V1)
        {
            return NextEvent::EveryRefresh;
        }
        let rotation = plan
            .as_ref()
            .filter(|p| p.phase == Phase::Three)
            .and_then(|p| self.rotation_turn(doc, &p.primary));
        [
            next_change_after(doc, now).map(|(at, _)| at),
            plan.as_ref()
                .and_then(|p| inner.cache.next_renewal(&p.ring)),
            verified.expires_at.map(UnixTime::as_secs_f64),
            self.renewal_turn(&verified),
            rotation,
            doc.rotation_claim.as_ref().map(|c| c.until.as_secs_f64()),
        ]
        .into_iter()
        .flatten()
        .filter_map(UnixTime::from_secs_f64)
        .min()
        .map_or(NextEvent::Never, NextEvent::At)
    }

    /// KMS calls made so far (steady-state traffic makes none).
    pub fn kms_calls(&self) -> u64 {
        self.inner.cache.kms_calls() + self.inner.trust.kms_calls()
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
    /// unusable for longer than its staleness bound
    /// ([`SchedulerConfig::store_staleness_limit`]), the ring verifies only:
    /// nothing new is sealed, states already sealed live out their TTL.
    ///
    /// # Errors
    /// Store errors, [`KeysetError::Refused`](crate::KeysetError::Refused), or [`DataError::KeysUnavailable`]
    /// when no key can seal (the ring is then cleared: fail closed).
    pub async fn refresh_at(&self, now: UnixTime) -> Result<SchedulerStatus, Error> {
        let result = self.refresh_inner(now.as_secs_f64()).await;
        self.record_refresh(now, result.as_ref().err());
        self.maybe_auto_rotate(&result?, now).await;
        Ok(self.status())
    }

    fn record_refresh(&self, now: UnixTime, error: Option<&Error>) {
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
            metrics::gauge!("stateseal_seconds_since_refresh")
                .set(now.as_secs_f64() - last.as_secs_f64());
        }
    }

    /// Says whether this instance seals (status, `/readyz`, `stateseal_ready`).
    pub(super) fn set_ready(&self, ready: bool) {
        metrics::gauge!("stateseal_ready").set(f64::from(u8::from(ready)));
        lock(&self.inner.status).ready = ready;
    }

    pub(super) fn fail_closed(&self) {
        self.inner.ring.clear();
        metrics::gauge!("stateseal_ready").set(0.0);
        let mut st = lock(&self.inner.status);
        st.ready = false;
        st.ring.clear();
    }

    /// Computes the ring of `doc` at `now` (unwrapping through the cache) and
    /// swaps it in; `sealing: false` installs it verifying only (not ready).
    pub(super) async fn install(&self, doc: &Keyset, now: f64, sealing: bool) -> Result<(), Error> {
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
            if primary.is_none() && (planned || e.activate_at <= UnixTime::from_finite_secs(now)) {
                primary = Some((keys.len(), e.entry.clone()));
            }
            keys.push(key);
        }
        let Some((p, primary_entry)) = primary else {
            // No key can seal: fail closed rather than keep a ring that no longer matches the keyset.
            self.fail_closed();
            return Err(Error::Data(DataError::KeysUnavailable(
                first_problem.unwrap_or_else(|| "every key has retired".to_owned()),
            )));
        };
        keys.swap(0, p);
        // The document's revocations travel with its keys: verify reads both from one load.
        let ring = KeyRing::from_keys(keys)?
            .with_revocations(crate::revocation::RevocationList::new(&doc.revocations));
        self.limit_seals(ring.primary(), &primary_entry);
        let recorded = ring.primary().seal_limit() != Some(0);
        *lock(&inner.primary_entry) = Some(primary_entry);
        let kids: Vec<String> = ring.kids().iter().map(|k| k.to_hex()).collect();
        let phase = plan.as_ref().map(|p| p.phase);
        if let Some(e) = plan.as_ref().and_then(|p| doc.entry(&p.primary)) {
            metrics::gauge!("stateseal_primary_key_age_seconds")
                .set(now - e.activate_at.as_secs_f64());
            // 0 for v2 keys, which reserve nothing.
            metrics::gauge!("stateseal_primary_key_seals_reserved").set(e.seals_reserved as f64);
        }
        // Budget alerts look only at keys that have a budget (v1).
        let budgeted = ring.primary().format() == crate::key::TokenFormat::V1;
        metrics::gauge!("stateseal_primary_key_budgeted").set(f64::from(u8::from(budgeted)));
        inner
            .ring
            .store(if sealing { ring } else { ring.verifying_only() });
        metrics::gauge!("stateseal_ring_generation").set(doc.generation as f64);
        let profile = doc.timing.unwrap_or_default();
        let live = doc.revocations.iter();
        let live = live.filter(|r| now < crate::keyset::live_until(r, &profile).as_secs_f64());
        metrics::gauge!("stateseal_revocations_live").set(live.count() as f64);
        metrics::gauge!("stateseal_rotation_phase").set(phase.map_or(0.0, |p| p as u8 as f64));
        // How long the current phase has left (0 with nothing scheduled): a phase
        // that should have ended shows as a generation that never changes while this stays 0.
        let to_next = next_change_after(doc, now).map_or(0.0, |(at, _)| (at - now).max(0.0));
        metrics::gauge!("stateseal_seconds_to_next_phase").set(to_next);
        metrics::gauge!("stateseal_max_seals_per_key").set(inner.config.max_seals_per_key as f64);
        // A v1 primary with nothing recorded seals nothing yet: not ready until
        // this process's first reservation lands (see `limit_seals`).
        let ready = sealing && recorded;
        metrics::gauge!("stateseal_ready").set(f64::from(u8::from(ready)));
        let mut st = lock(&inner.status);
        st.ready = ready;
        st.generation = Some(doc.generation);
        st.phase = phase;
        st.ring = kids;
        Ok(())
    }
}
