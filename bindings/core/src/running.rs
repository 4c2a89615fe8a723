//! One running instance in this process: a runtime whose threads run the
//! rotation scheduler's refresh loop, and the codec over the ring it keeps.

use std::sync::Arc;
use std::time::Duration;

use stateseal::boundary::Boundary;
use stateseal::rotation::{KeysetTrust, load_verified};
use stateseal::setup::{Config, Protection};
use stateseal::{AesGcmCodec, Error, ProviderRegistry, StateCodec};

/// What a codec is started from (kept so a forked child can start its own).
#[derive(Debug, Clone)]
pub struct Recipe {
    /// The configuration as the caller gave it (timing not yet from the keyset).
    pub config: Config,
    /// Whether `local://` KEKs are accepted (development only).
    pub allow_local_kek: bool,
    /// Timing fields the caller set; the others follow the keyset's profile.
    pub explicit_timing: ExplicitTiming,
}

/// Which of R, S, T and P the caller gave.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExplicitTiming {
    /// R was given.
    pub refresh_interval: bool,
    /// S was given.
    pub max_skew: bool,
    /// T was given.
    pub ttl: bool,
    /// P was given.
    pub propagation: bool,
}

impl Recipe {
    /// The configuration with the keyset's timing profile (R, S, T, P) in
    /// every field the caller left unset, as the fleet's Rust servers read it.
    /// The profile is read only from a document the configuration's trust
    /// accepts; a store that cannot be read yet, or a document it refuses,
    /// leaves the configuration as it is (start-up then reports why).
    async fn config_for(&self, registry: &ProviderRegistry) -> Config {
        let mut config = self.config.clone();
        let Ok(store) = registry.open_store(&config.store) else {
            return config;
        };
        let Ok(trust) = config.trust_policy() else {
            return config;
        };
        let trust = KeysetTrust::new(trust);
        let now = stateseal::Clock::now(&stateseal::SystemClock);
        let Ok(verified) = load_verified(store.as_ref(), registry, &trust, now).await else {
            return config;
        };
        if let Some(t) = verified.doc.timing {
            let e = self.explicit_timing;
            if !e.refresh_interval {
                config.refresh_interval = t.refresh_interval;
            }
            if !e.max_skew {
                config.max_skew = t.max_skew;
            }
            if !e.ttl {
                config.ttl = t.ttl;
            }
            // P belongs to the profile's R and S: with either overridden, P follows them (2R + S).
            if !e.propagation && !e.refresh_interval && !e.max_skew {
                config.propagation = Some(t.propagation);
            }
        }
        config
    }
}

/// A started codec: its scheduler on a runtime of its own, and the codec over its ring.
pub struct Running {
    /// The process that started it: a child after `fork` has none of its threads.
    pub pid: u32,
    /// The state lifetime T in force (the SDK's `RequestStateSecurity` takes the same).
    pub ttl: f64,
    /// The clock skew S in force (a single-use record is kept until its state's expiry plus S).
    pub max_skew: f64,
    /// S as the data plane takes it.
    skew: Duration,
    /// Seals and opens with the scheduler's ring.
    pub codec: AesGcmCodec,
    /// The protection's boundary, kept: which rounds are single-use, and their replay store.
    pub(crate) boundary: Option<Boundary>,
    /// Whether any round is single-use (without, seals skip the claims parse).
    pub(crate) single_use_rounds: bool,
    protection: Option<Protection>,
    pub(crate) runtime: Option<tokio::runtime::Runtime>,
}

impl Running {
    /// Starts the scheduler and waits (up to `ready_timeout`) for the first ring.
    ///
    /// # Errors
    /// A configuration the keyset refuses, or no ring within `ready_timeout`.
    pub fn start(recipe: &Recipe) -> Result<Self, Error> {
        // One AES-256-GCM implementation per process: a bad STATESEAL_AEAD is refused here.
        stateseal::AeadBackend::select_from_env()?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("stateseal-keyset")
            .enable_all()
            .build()
            .map_err(|e| Error::Config(format!("cannot start the background runtime: {e}")))?;
        let registry = stateseal_providers::registry_from_env(recipe.allow_local_kek);
        let protection = runtime.block_on(async {
            let config = recipe.config_for(&registry).await;
            config.validate()?;
            let single_use = !(config.single_use_tools.is_empty()
                && config.single_use_prompts.is_empty()
                && config.single_use_resources.is_empty());
            let timing = (
                config.ttl.as_secs_f64(),
                config.max_skew.as_secs_f64(),
                config.max_skew,
                single_use,
            );
            stateseal::setup::start(&config, registry)
                .await
                .map(|p| (p, timing))
        });
        let (protection, (ttl, max_skew, skew, single_use)) = protection?;
        let codec = AesGcmCodec::new(protection.scheduler().ring());
        Ok(Self {
            pid: std::process::id(),
            ttl,
            max_skew,
            skew,
            codec,
            single_use_rounds: single_use,
            boundary: Some(protection.boundary()),
            protection: Some(protection),
            runtime: Some(runtime),
        })
    }

    /// The clock skew S in force, as the envelope and single-use records take it.
    pub fn max_skew_duration(&self) -> Duration {
        self.skew
    }

    /// The scheduler and boundary (`None` once shut down).
    pub fn protection(&self) -> Option<&Protection> {
        self.protection.as_ref()
    }

    /// Seals `payload` under the ring's primary key.
    ///
    /// # Errors
    /// As [`StateCodec::seal`].
    pub fn seal(&self, payload: &[u8]) -> Result<String, Error> {
        self.codec.seal(payload)
    }

    /// Opens a token sealed under any key of the ring.
    ///
    /// # Errors
    /// As [`StateCodec::unseal`].
    pub fn unseal(&self, token: &str) -> Result<Vec<u8>, Error> {
        self.codec.unseal(token)
    }

    /// Abandons an instance inherited across `fork`: its runtime's threads do
    /// not exist in this process, so shutting it down would wait for them forever.
    pub fn abandon(running: Arc<Self>) {
        std::mem::forget(running);
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // The refresh task first, then the runtime, without waiting on I/O in flight.
        drop(self.boundary.take());
        drop(self.protection.take());
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}
