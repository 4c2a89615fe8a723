#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod config;
mod provider;
mod session;
mod store;

use std::sync::Arc;

use stateseal::{Error, KeysetStore, ProviderRegistry};

pub use config::{
    KUBERNETES_JWT_PATH, SecretId, SecretString, VaultAuth, VaultConfig, VaultConfigBuilder,
};
pub use provider::{TransitKey, VaultTransitProvider};
pub use session::AuthStats;
pub use store::VaultKvStore;

/// KEK URI scheme: `hcvault://<transit mount>/keys/<name>`.
pub const SCHEME: &str = "hcvault";

/// Keyset store URI scheme: `vault-kv://<kv v2 mount>/<path>`.
pub const STORE_SCHEME: &str = "vault-kv";

/// Registers the `hcvault` provider and the `vault-kv` store, sharing one Vault session.
///
/// A configuration error (say, `VAULT_ADDR` unset) is not raised here: it is
/// the answer of every later call that needs Vault, so a program can register
/// Vault unconditionally and only fail when a URI actually names it.
///
/// ```
/// use stateseal::ProviderRegistry;
/// let mut registry = ProviderRegistry::with_defaults();
/// stateseal_vault::register(&mut registry, Err(stateseal::Error::Config("VAULT_ADDR is not set".into())));
/// assert!(registry.provider_for("hcvault://transit/keys/k").is_ok());
/// ```
pub fn register(registry: &mut ProviderRegistry, config: Result<VaultConfig, Error>) {
    let session = Arc::new(session::Session::new(config));
    registry.register_provider(Arc::new(VaultTransitProvider::with_session(Arc::clone(
        &session,
    ))));
    registry.register_store(STORE_SCHEME, move |uri| {
        Ok(Arc::new(VaultKvStore::open(Arc::clone(&session), uri)?) as Arc<dyn KeysetStore>)
    });
}
