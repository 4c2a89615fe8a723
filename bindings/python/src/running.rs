//! One running instance in this process: a runtime whose threads run the
//! rotation scheduler's refresh loop, and the codec over the ring it keeps.

use std::sync::Arc;

use stateseal::setup::{Config, Protection};
use stateseal::{AesGcmCodec, Error, ProviderRegistry, StateCodec};

/// The registry every codec resolves KEK and store URIs with: the built-in
/// `file` store (and `local` KEK where asked) plus every provider crate,
/// configured from the environment.
fn registry(allow_local_kek: bool) -> ProviderRegistry {
    let mut registry = ProviderRegistry::with_defaults();
    if allow_local_kek {
        registry.allow_local_kek();
    }
    stateseal_vault::register(&mut registry, stateseal_vault::VaultConfig::from_env());
    stateseal_aws_kms::register(&mut registry, stateseal_aws_kms::AwsConfig::default());
    stateseal_gcp_kms::register(&mut registry, stateseal_gcp_kms::GcpKmsConfig::from_env());
    stateseal_object_store::register(&mut registry);
    registry
}

/// What a codec is started from (kept so a forked child can start its own).
#[derive(Debug, Clone)]
pub(crate) struct Recipe {
    pub(crate) config: Config,
    pub(crate) allow_local_kek: bool,
}

pub(crate) struct Running {
    /// The process that started it: a child after `fork` has none of its threads.
    pub(crate) pid: u32,
    pub(crate) codec: AesGcmCodec,
    protection: Option<Protection>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Running {
    /// Starts the scheduler and waits (up to `ready_timeout`) for the first ring.
    pub(crate) fn start(recipe: &Recipe) -> Result<Self, Error> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("stateseal-keyset")
            .enable_all()
            .build()
            .map_err(|e| Error::Config(format!("cannot start the background runtime: {e}")))?;
        let registry = registry(recipe.allow_local_kek);
        let protection = runtime.block_on(stateseal::setup::start(&recipe.config, registry))?;
        let codec = AesGcmCodec::new(protection.scheduler().ring());
        Ok(Self {
            pid: std::process::id(),
            codec,
            protection: Some(protection),
            runtime: Some(runtime),
        })
    }

    pub(crate) fn protection(&self) -> Option<&Protection> {
        self.protection.as_ref()
    }

    pub(crate) fn seal(&self, payload: &[u8]) -> Result<String, Error> {
        self.codec.seal(payload)
    }

    pub(crate) fn unseal(&self, token: &str) -> Result<Vec<u8>, Error> {
        self.codec.unseal(token)
    }

    /// Abandons an instance inherited across `fork`: its runtime's threads do
    /// not exist in this process, so shutting it down would wait for them forever.
    pub(crate) fn abandon(running: Arc<Self>) {
        std::mem::forget(running);
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // The refresh task first, then the runtime, without waiting on I/O in flight.
        drop(self.protection.take());
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}
