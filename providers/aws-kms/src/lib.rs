#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod config;
mod provider;

use std::sync::Arc;

use stateseal::ProviderRegistry;

pub use config::{AwsConfig, AwsConfigBuilder};
pub use provider::{AwsKmsProvider, CONTEXT_ENTRY, CONTEXT_KEYSET, KmsKeyArn};

/// KEK URI scheme: `aws-kms://<key ARN | alias ARN>`.
pub const SCHEME: &str = "aws-kms";

/// Registers the `aws-kms` provider. The `s3://` keyset store lives in
/// `stateseal-object-store` (`register_s3`).
///
/// Nothing touches AWS here: the SDK configuration (credential chain, region)
/// loads on the first call that needs it, so a program can register AWS
/// unconditionally.
///
/// ```
/// use stateseal::ProviderRegistry;
/// use stateseal_aws_kms::AwsConfig;
/// let mut registry = ProviderRegistry::with_defaults();
/// stateseal_aws_kms::register(&mut registry, AwsConfig::builder().build()?);
/// assert!(registry.provider_for("aws-kms://arn:aws:kms:eu-west-1:111122223333:alias/stateseal").is_ok());
/// # Ok::<(), stateseal::Error>(())
/// ```
pub fn register(registry: &mut ProviderRegistry, config: AwsConfig) {
    registry.register_provider(Arc::new(AwsKmsProvider::new(config)));
}
