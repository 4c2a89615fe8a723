#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

#[cfg(not(any(feature = "s3", feature = "gcs", feature = "azure")))]
compile_error!("stateseal-object-store needs at least one of its features: `s3`, `gcs`, `azure`");

#[cfg(feature = "azure")]
mod azure;
mod document;
#[cfg(feature = "gcs")]
mod gcs;
#[cfg(feature = "s3")]
mod s3;

#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
use std::sync::Arc;

#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
use stateseal::KeysetStore;
use stateseal::ProviderRegistry;

#[cfg(feature = "azure")]
pub use azure::{AzureBlobConfig, AzureBlobConfigBuilder, AzureBlobStore};
#[cfg(feature = "gcs")]
pub use gcs::{GcsConfig, GcsConfigBuilder, GcsStore};
#[cfg(feature = "s3")]
pub use s3::{S3Config, S3ConfigBuilder, S3Store};

/// Keyset store URI scheme of S3: `s3://<bucket>/<key>`.
pub const S3_SCHEME: &str = "s3";

/// Keyset store URI scheme of Cloud Storage: `gs://<bucket>/<object>`.
pub const GCS_SCHEME: &str = "gs";

/// Keyset store URI scheme of Azure Blob Storage: `az-blob://<account>/<container>/<blob>`.
pub const AZURE_SCHEME: &str = "az-blob";

/// Registers the `s3` store. Nothing touches AWS here: the SDK chain
/// (credentials, region, endpoint) loads on the store's first request.
///
/// ```
/// use stateseal::ProviderRegistry;
/// use stateseal_object_store::S3Config;
/// let mut registry = ProviderRegistry::with_defaults();
/// stateseal_object_store::register_s3(&mut registry, S3Config::builder().build()?);
/// assert!(registry.open_store("s3://stateseal-keys/keyset.json").is_ok());
/// # Ok::<(), stateseal::Error>(())
/// ```
#[cfg(feature = "s3")]
pub fn register_s3(registry: &mut ProviderRegistry, config: S3Config) {
    registry.register_store(S3_SCHEME, move |uri| {
        Ok(Arc::new(S3Store::open(config.clone(), uri)?) as Arc<dyn KeysetStore>)
    });
}

/// Registers the `gs` store. A configuration error (from
/// [`GcsConfig::from_env`]) surfaces when a `gs://` URI is opened, so a
/// program can register GCS unconditionally.
///
/// ```
/// use stateseal::ProviderRegistry;
/// use stateseal_object_store::GcsConfig;
/// let mut registry = ProviderRegistry::with_defaults();
/// stateseal_object_store::register_gcs(&mut registry, GcsConfig::from_env());
/// assert!(registry.open_store("gs://stateseal-keys/fleet/keyset.json").is_ok());
/// # Ok::<(), stateseal::Error>(())
/// ```
#[cfg(feature = "gcs")]
pub fn register_gcs(registry: &mut ProviderRegistry, config: Result<GcsConfig, stateseal::Error>) {
    registry.register_store(GCS_SCHEME, move |uri| {
        let config = config.clone()?;
        Ok(Arc::new(GcsStore::open(config, uri)?) as Arc<dyn KeysetStore>)
    });
}

/// Registers the `az-blob` store. A configuration error (from
/// [`AzureBlobConfig::from_env`]) surfaces when an `az-blob://` URI is opened.
///
/// ```
/// use stateseal::ProviderRegistry;
/// use stateseal_object_store::AzureBlobConfig;
/// let mut registry = ProviderRegistry::with_defaults();
/// stateseal_object_store::register_azure(&mut registry, AzureBlobConfig::from_env());
/// assert!(registry.open_store("az-blob://contoso/stateseal-keys/fleet/keyset.json").is_ok());
/// ```
#[cfg(feature = "azure")]
pub fn register_azure(
    registry: &mut ProviderRegistry,
    config: Result<AzureBlobConfig, stateseal::Error>,
) {
    registry.register_store(AZURE_SCHEME, move |uri| {
        let config = config.clone()?;
        Ok(Arc::new(AzureBlobStore::open(config, uri)?) as Arc<dyn KeysetStore>)
    });
}

/// Registers every store this build has (`s3`, `gs`, `az-blob`), each configured from
/// the environment as its `register_*` function describes.
///
/// ```
/// let mut registry = stateseal::ProviderRegistry::with_defaults();
/// stateseal_object_store::register(&mut registry);
/// ```
pub fn register(registry: &mut ProviderRegistry) {
    #[cfg(feature = "s3")]
    register_s3(registry, S3Config::default());
    #[cfg(feature = "gcs")]
    register_gcs(registry, GcsConfig::from_env());
    #[cfg(feature = "azure")]
    register_azure(registry, AzureBlobConfig::from_env());
}
