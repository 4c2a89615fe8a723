//! One fleet member, as the suites drive it: a rotation scheduler on a manual
//! clock, the ring it keeps, and the envelope that seals with it. Time passes
//! only when a test says so (`sched.refresh_at(now)`, `works(now)`).
//!
//! ```
//! # let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
//! # rt.block_on(async {
//! use std::sync::Arc;
//! use stateseal::rotation::{Timing, init_keyset};
//! use stateseal::{FileStore, KeysetStore, LocalProvider, ProviderRegistry, UnixTime};
//! use stateseal_contract::member::Member;
//!
//! let dir = std::env::temp_dir().join(format!("member-doc-{}", std::process::id()));
//! # let _ = std::fs::remove_dir_all(&dir);
//! std::fs::create_dir_all(&dir).unwrap();
//! LocalProvider::create_kek(&dir.join("kek.bin")).unwrap();
//! let kek = format!("local://{}", dir.join("kek.bin").display());
//! let mut registry = ProviderRegistry::with_defaults();
//! registry.allow_local_kek();
//! let store: Arc<dyn KeysetStore> = Arc::new(FileStore::new(dir.join("keyset.json")));
//! let at = UnixTime::from_secs(1_782_345_600);
//! init_keyset(store.as_ref(), &registry, &kek, Timing::default(), at).await.unwrap();
//!
//! let member = Member::pinned(&registry, store, at).await;
//! member.sched.refresh_at(at).await.unwrap();
//! assert!(member.works(at));
//! # let _ = std::fs::remove_dir_all(&dir);
//! # });
//! ```

use std::sync::Arc;
use std::time::Duration;

use stateseal::rotation::{SchedulerConfig, TrustPolicy};
use stateseal::{
    Envelope, KeysetStore, ManualClock, MintOptions, OpenOptions, ProviderRegistry,
    RequestIdentity, RingHandle, RotationScheduler, UnixTime,
};

/// A fleet member.
#[derive(Debug)]
pub struct Member {
    /// Its scheduler; tests drive it with `refresh_at`.
    pub sched: RotationScheduler,
    /// Its envelope (audience `svc`), sealing with the scheduler's ring.
    pub env: Envelope,
}

/// A scheduler on `store` at `t` (a manual clock) with a fresh, empty ring.
///
/// # Panics
/// When `config` is refused.
pub fn instance(
    config: SchedulerConfig,
    store: Arc<dyn KeysetStore>,
    registry: &ProviderRegistry,
    t: UnixTime,
) -> RotationScheduler {
    RotationScheduler::new(
        config,
        store,
        registry.clone(),
        Arc::new(RingHandle::empty()),
        Arc::new(ManualClock::new(t)),
    )
    .expect("scheduler")
}

/// The request the member's rounds are for.
///
/// # Panics
/// Never: the request is a constant.
pub fn round() -> RequestIdentity {
    RequestIdentity::from_json("tools/call", br#"{"name":"t","arguments":{}}"#).expect("identity")
}

impl Member {
    /// A member of the keyset in `store` (a `file://` one: nothing pinned),
    /// its clock at `t0`: `max_key_age` 1 h, `outage_grace` 24 h, store
    /// outages ridden out for 24 h too (`max_store_staleness`, above its 2P
    /// default: these members test outages, not partitions), no automatic
    /// rotation, no seal reservations and no renewals (so a test can count
    /// the keyset's generations).
    ///
    /// # Panics
    /// When the scheduler cannot be built.
    pub fn new(registry: &ProviderRegistry, store: Arc<dyn KeysetStore>, t0: UnixTime) -> Self {
        Self::with_trust(registry, store, t0, TrustPolicy::default())
    }

    /// [`Member::new`] pinned to the keyset the store holds now, as its
    /// operator would configure it (any store).
    ///
    /// # Panics
    /// When the store holds no keyset that verifies.
    pub async fn pinned(
        registry: &ProviderRegistry,
        store: Arc<dyn KeysetStore>,
        t0: UnixTime,
    ) -> Self {
        let trust = crate::keysets::pins_of(store.as_ref(), registry).await;
        Self::with_trust(registry, store, t0, trust)
    }

    /// [`Member::new`] believing what `trust` says.
    ///
    /// # Panics
    /// When the scheduler cannot be built.
    pub fn with_trust(
        registry: &ProviderRegistry,
        store: Arc<dyn KeysetStore>,
        t0: UnixTime,
        trust: TrustPolicy,
    ) -> Self {
        let ring = Arc::new(RingHandle::empty());
        let config = SchedulerConfig::builder()
            .max_key_age(Duration::from_secs(3600))
            .outage_grace(Duration::from_secs(86_400))
            .max_store_staleness(Some(Duration::from_secs(86_400)))
            .rotation_period(None)
            .seal_reservation_block(None)
            .renew_keyset(false)
            .trust(trust)
            .build()
            .expect("config");
        let sched = RotationScheduler::new(
            config,
            store,
            registry.clone(),
            ring.clone(),
            Arc::new(ManualClock::new(t0)),
        )
        .expect("scheduler");
        let env = Envelope::builder(ring, Some("svc"))
            .build()
            .expect("envelope");
        Self { sched, env }
    }

    /// Whether a state minted at `now` verifies at `now`.
    pub fn works(&self, now: UnixTime) -> bool {
        self.env
            .mint(&round(), b"s", MintOptions::new().at(now))
            .and_then(|t| self.env.open(&round(), &t, OpenOptions::new().at(now)))
            .is_ok()
    }
}
