#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

use stateseal::ProviderRegistry;

/// Registers `hcvault`, `vault-kv`, `aws-kms`, `gcp-kms`, `s3` and `gs`, each
/// configured from the environment. The built-in `file` store (and `local`,
/// where allowed) come from the registry itself.
pub fn register_from_env(registry: &mut ProviderRegistry) {
    stateseal_vault::register(registry, stateseal_vault::VaultConfig::from_env());
    stateseal_aws_kms::register(registry, stateseal_aws_kms::AwsConfig::default());
    stateseal_gcp_kms::register(registry, stateseal_gcp_kms::GcpKmsConfig::from_env());
    stateseal_object_store::register(registry);
}
