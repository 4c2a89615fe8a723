#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod config;
mod provider;

use std::sync::Arc;

use stateseal::ProviderRegistry;

pub use config::{GcpKmsConfig, GcpKmsConfigBuilder};
pub use provider::{CryptoKeyName, GcpKmsProvider};

/// KEK URI scheme: `gcp-kms://projects/<p>/locations/<l>/keyRings/<r>/cryptoKeys/<k>`.
pub const SCHEME: &str = "gcp-kms";

/// Registers the `gcp-kms` provider. Nothing touches Google here: the client
/// (and Application Default Credentials) load on the first call that needs
/// them. A configuration error is the answer of every such call.
///
/// ```
/// use stateseal::ProviderRegistry;
/// let mut registry = ProviderRegistry::with_defaults();
/// stateseal_gcp_kms::register(&mut registry, stateseal_gcp_kms::GcpKmsConfig::from_env());
/// assert!(registry.provider_for("gcp-kms://projects/p/locations/l/keyRings/r/cryptoKeys/k").is_ok());
/// ```
pub fn register(registry: &mut ProviderRegistry, config: Result<GcpKmsConfig, stateseal::Error>) {
    match config {
        Ok(c) => {
            registry.register_provider(Arc::new(GcpKmsProvider::new(c)));
        }
        Err(e) => {
            registry.register_provider(Arc::new(GcpKmsProvider::misconfigured(e.to_string())));
        }
    }
}
