#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

use stateseal::ProviderRegistry;

/// Registers `hcvault`, `vault-kv`, `aws-kms`, `gcp-kms`, `azure-kv`, `s3`, `gs` and `az-blob`, each
/// configured from the environment, and the `redis`, `rediss`, `redis-cluster` and `rediss-cluster` replay
/// stores. The built-in `file` store, `memory://` replay store (and `local`,
/// where allowed) come from the registry itself.
pub fn register_from_env(registry: &mut ProviderRegistry) {
    stateseal_vault::register(registry, stateseal_vault::VaultConfig::from_env());
    stateseal_aws_kms::register(registry, stateseal_aws_kms::AwsConfig::default());
    stateseal_gcp_kms::register(registry, stateseal_gcp_kms::GcpKmsConfig::from_env());
    stateseal_azure_kv::register(registry, stateseal_azure_kv::AzureKvConfig::from_env());
    stateseal_object_store::register(registry);
    stateseal_redis::register(registry);
}

/// A registry with every provider configured from the environment, the
/// built-in `file` store, and the development-only `local` KEK when
/// `allow_local_kek` (what a server, a binding or the CLI resolves URIs with).
///
/// ```
/// let registry = stateseal_providers::registry_from_env(false);
/// # let _ = registry;
/// ```
pub fn registry_from_env(allow_local_kek: bool) -> ProviderRegistry {
    let mut registry = ProviderRegistry::with_defaults();
    if allow_local_kek {
        registry.allow_local_kek();
    }
    register_from_env(&mut registry);
    registry
}
