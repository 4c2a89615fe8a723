//! One-call setup for server authors: configuration in, a ready boundary out.
//!
//! ```no_run
//! # async fn run() -> Result<(), stateseal::Error> {
//! use stateseal::ProviderRegistry;
//! use stateseal::setup::{Config, start};
//!
//! let config = Config::from_env()?; // STATESEAL_STORE, STATESEAL_AUDIENCE, … or STATESEAL_CONFIG=file.toml
//! let protection = start(&config, ProviderRegistry::with_defaults()).await?;
//! let boundary = protection.boundary(); // give it to StateSealed::new(handler, boundary)
//! assert!(protection.is_ready());
//! # Ok(()) }
//! ```

mod builder;
mod config;
mod seconds;
mod vars;

use std::sync::Arc;
use std::time::{Duration, Instant};

pub use builder::ConfigBuilder;
pub use config::{AeadName, Config, FailureModeName};

use crate::boundary::Boundary;
use crate::cipher::aead::AeadBackend;
use crate::clock::SystemClock;
use crate::envelope::Envelope;
use crate::error::{Error, KeysetError};
use crate::keyset::Keyset;
use crate::provider::ProviderRegistry;
use crate::ring::RingHandle;
use crate::rotation::{RotateMode, RotationScheduler, SchedulerStatus, init_keyset};

/// A running protection: the boundary to wrap handlers with, and the handle
/// for readiness, status (metrics) and manual rotation. Dropping it stops the
/// background refresh.
#[derive(Debug)]
pub struct Protection {
    boundary: Boundary,
    scheduler: RotationScheduler,
    refresh: tokio::task::JoinHandle<()>,
}

impl Drop for Protection {
    fn drop(&mut self) {
        self.refresh.abort();
    }
}

impl Protection {
    /// The boundary (cheap to clone).
    pub fn boundary(&self) -> Boundary {
        self.boundary.clone()
    }

    /// The scheduler keeping this instance's ring in step with the keyset.
    pub fn scheduler(&self) -> &RotationScheduler {
        &self.scheduler
    }

    /// Whether a key ring is loaded (for a readiness probe).
    pub fn is_ready(&self) -> bool {
        self.scheduler.is_ready()
    }

    /// Phase, ring, last refresh, KMS calls: what the gauges report.
    pub fn status(&self) -> SchedulerStatus {
        self.scheduler.status()
    }

    /// Starts a rotation (one compare-and-swap write shared by the whole fleet).
    ///
    /// # Errors
    /// As [`RotationScheduler::rotate_at`].
    pub async fn rotate(&self, mode: RotateMode) -> Result<Keyset, Error> {
        self.scheduler.rotate(mode).await
    }
}

/// Builds everything from `config`: opens the store (creating the keyset when
/// `create_if_missing` says so), starts the scheduler, waits up to
/// `ready_timeout` for the first key ring, and returns the boundary.
///
/// # Errors
/// [`Error::Config`] for invalid configuration, an unknown scheme or a store
/// that cannot be opened; [`DataError::NotReady`](crate::DataError::NotReady)-like timeouts are reported as
/// [`Error::Config`] naming the store and the last refresh error.
pub async fn start(config: &Config, registry: ProviderRegistry) -> Result<Protection, Error> {
    start_with_clock(config, registry, Arc::new(SystemClock)).await
}

/// Where a fleet's replay records live in a shared store: under its keyset's id.
fn replay_prefix(keyset_id: &str) -> String {
    format!("stateseal:replay:{keyset_id}:")
}

/// [`start`] with another clock for the scheduler and the envelope (a test's
/// [`crate::ManualClock`], or a deliberately skewed clock in a soak).
///
/// # Errors
/// As [`start`].
pub async fn start_with_clock(
    config: &Config,
    registry: ProviderRegistry,
    clock: Arc<dyn crate::clock::Clock>,
) -> Result<Protection, Error> {
    config.validate()?;
    // Before the first key is prepared: the process seals with one backend.
    let aead = AeadBackend::select(config.aead.backend())
        .map_err(|e| Error::Config(format!("field `aead`: {e}")))?;
    metrics::gauge!("stateseal_aead_backend", "backend" => aead.name()).set(1.0);
    registry
        .check_keks(config.kek.as_slice())
        .map_err(|e| Error::Config(format!("field `kek`: {e}")))?;
    registry
        .check_keks(&config.keyset_keks)
        .map_err(|e| Error::Config(format!("field `keyset_keks`: {e}")))?;
    // Checked before anything else happens (opening connects nothing); opened
    // for real once the keyset is adopted, under its id, with a copy of the
    // registry kept from before it moves into the scheduler.
    let open_replay = |registry: &ProviderRegistry, uri: &str, id: &str| {
        registry
            .open_replay_store(uri, &replay_prefix(id))
            .map_err(|e| Error::Config(format!("field `replay_store`: {e}")))
    };
    let replay = match &config.replay_store {
        Some(uri) => {
            open_replay(&registry, uri, "check")?;
            Some((uri, registry.clone()))
        }
        None => None,
    };
    let scheduler_config = config.scheduler_config();
    let store = registry
        .open_store(&config.store)
        .map_err(|e| Error::Config(format!("field `store`: {e}")))?;
    if config.create_if_missing
        && let Some(kek) = &config.kek
        && store.load().await?.is_none()
    {
        match init_keyset(
            store.as_ref(),
            &registry,
            kek,
            scheduler_config.timing,
            clock.now(),
        )
        .await
        {
            // Another instance created it first: use theirs.
            Ok(_) | Err(Error::Keyset(KeysetError::Conflict { .. })) => {}
            Err(e) => {
                return Err(Error::Config(format!(
                    "field `kek`: creating the keyset failed: {e}"
                )));
            }
        }
    }
    let ring = Arc::new(RingHandle::empty());
    let timing = scheduler_config.timing;
    let scheduler = RotationScheduler::new(
        scheduler_config,
        store,
        registry,
        ring.clone(),
        Arc::clone(&clock),
    )?;
    // `None`: a timeout past what the monotonic clock holds, i.e. no deadline.
    let deadline = Instant::now().checked_add(config.ready_timeout);
    // A fleet started at once (or a KMS quota it shares) is retried spread out.
    let pacing = scheduler.pacing();
    let mut failures = 0u32;
    loop {
        match scheduler.refresh().await {
            Ok(_) => break,
            Err(e) if deadline.is_some_and(|d| Instant::now() >= d) => {
                return Err(Error::Config(format!(
                    "the keyset at {} gave no usable key within ready_timeout ({}s): {e}",
                    config.store,
                    config.ready_timeout.as_secs_f64()
                )));
            }
            Err(_) => {
                failures = failures.saturating_add(1);
                let wait = pacing.after_failure(failures, crate::rotation::unit_draw());
                let left = deadline.map_or(Duration::MAX, |d| {
                    d.saturating_duration_since(Instant::now())
                });
                tokio::time::sleep(wait.min(left)).await;
            }
        }
    }
    // Keys per keyset, named by the adopted document's id (not the
    // configuration's, which only some instances pin): every instance of a
    // fleet records under one prefix, and fleets on other keysets sharing the
    // server never meet.
    let replay_store = match &replay {
        Some((uri, registry)) => {
            let id = scheduler.keyset_id().unwrap_or_else(|| "file".to_owned());
            Some(open_replay(registry, uri, &id)?)
        }
        None => None,
    };
    let refresh = scheduler.spawn();
    let envelope = Envelope::builder(ring, Some(&config.audience))
        .ttl(timing.ttl)
        .max_skew(timing.max_skew)
        .clock(clock)
        .build()?;
    let mut boundary =
        Boundary::builder(Arc::new(envelope)).failure_mode(config.failure_mode.into());
    if let Some(store) = replay_store {
        boundary = boundary.replay_store(store);
    }
    let single_use = [
        ("tools/call", &config.single_use_tools),
        ("prompts/get", &config.single_use_prompts),
        ("resources/read", &config.single_use_resources),
    ];
    for (method, targets) in single_use {
        for target in targets {
            boundary = boundary.single_use(method, target);
        }
    }
    let boundary = boundary.build();
    // Within the store's own deadline; a failure is readiness detail, not fatal.
    boundary.prepare_replay_store().await;
    Ok(Protection {
        boundary,
        scheduler,
        refresh,
    })
}
