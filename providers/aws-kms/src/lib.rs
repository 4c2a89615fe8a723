#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod config;
mod provider;
mod store;

use std::sync::Arc;

use stateseal::{KeysetStore, ProviderRegistry};

pub use config::{AwsConfig, AwsConfigBuilder};
pub use provider::{AwsKmsProvider, CONTEXT_ENTRY, CONTEXT_KEYSET, KmsKeyArn};
pub use store::S3Store;

/// KEK URI scheme: `aws-kms://<key ARN | alias ARN>`.
pub const SCHEME: &str = "aws-kms";

/// Keyset store URI scheme: `s3://<bucket>/<key>`.
pub const STORE_SCHEME: &str = "s3";

/// Registers the `aws-kms` provider and the `s3` store.
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
/// assert!(registry.open_store("s3://stateseal-keys/keyset.json").is_ok());
/// # Ok::<(), stateseal::Error>(())
/// ```
pub fn register(registry: &mut ProviderRegistry, config: AwsConfig) {
    registry.register_provider(Arc::new(AwsKmsProvider::new(config.clone())));
    registry.register_store(STORE_SCHEME, move |uri| {
        Ok(Arc::new(S3Store::open(config.clone(), uri)?) as Arc<dyn KeysetStore>)
    });
}
