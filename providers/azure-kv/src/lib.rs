#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod answer;
mod config;
mod credential;
mod key;
mod provider;
mod wrapped;

use std::sync::Arc;

use stateseal::ProviderRegistry;

pub use config::{AzureCredentialKind, AzureKvConfig, AzureKvConfigBuilder};
pub use key::HsmKeyName;
pub use provider::AzureKvProvider;

/// KEK URI scheme: `azure-kv://<hsm>.managedhsm.azure.net/keys/<name>[/<version>]`.
pub const SCHEME: &str = "azure-kv";

/// Registers the `azure-kv` provider. Nothing touches Azure here: the client
/// (and its credential) is built on the first call that needs it. A
/// configuration error is the answer of every such call.
///
/// ```
/// use stateseal::ProviderRegistry;
/// let mut registry = ProviderRegistry::with_defaults();
/// stateseal_azure_kv::register(&mut registry, stateseal_azure_kv::AzureKvConfig::from_env());
/// assert!(registry.provider_for("azure-kv://contoso.managedhsm.azure.net/keys/stateseal").is_ok());
/// ```
pub fn register(registry: &mut ProviderRegistry, config: Result<AzureKvConfig, stateseal::Error>) {
    let provider = match config {
        Ok(c) => AzureKvProvider::new(c),
        Err(e) => AzureKvProvider::misconfigured(e.to_string()),
    };
    registry.register_provider(Arc::new(provider));
}
