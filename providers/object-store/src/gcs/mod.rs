//! `gs://<bucket>/<object>`: the keyset document as one Cloud Storage object.
//!
//! Generations are the versions: the first write carries
//! `x-goog-if-generation-match: 0` (create only), every later one the
//! generation this store just read at the expected keyset generation. Cloud
//! Storage answers a stale or duplicate write with `412 Precondition Failed`,
//! so concurrent rotations land exactly once.

mod config;
mod endpoint;

use std::sync::Arc;

use object_store::ObjectStore;
use object_store::client::StaticCredentialProvider;
use object_store::gcp::{GcpCredential, GoogleCloudStorageBuilder};
use stateseal::provider::{BoxFuture, is_loopback_http};
use stateseal::{Error, ProviderError, StoredKeyset};

pub use config::{GcsConfig, GcsConfigBuilder};

use crate::document::{Connect, ObjectDocument, keyset_store_over_document, short};
use endpoint::EndpointConnector;

#[derive(Debug)]
struct GcsConnect {
    config: GcsConfig,
    uri: String,
    bucket: String,
}

impl GcsConnect {
    fn build(&self) -> Result<Arc<dyn ObjectStore>, Error> {
        let c = &self.config;
        let fail = |p: String| {
            Error::Provider(ProviderError::Store {
                uri: self.uri.clone(),
                problem: p,
            })
        };
        let allow_http = c.endpoint().is_some_and(is_loopback_http);
        let mut b = GoogleCloudStorageBuilder::new()
            .with_bucket_name(&self.bucket)
            .with_retry(c.limits.retry())
            .with_client_options(c.limits.client_options(allow_http))
            .with_skip_signature(c.anonymous());
        if let Some(url) = c.endpoint() {
            let connector = EndpointConnector::new(url)
                .ok_or_else(|| fail(format!("endpoint {url:?} is not a URL")))?;
            b = b.with_http_connector(connector);
        }
        if c.anonymous() {
            // object_store 0.12 honours skip_signature on reads but still asks
            // for a token on writes: an empty one keeps it off the metadata server.
            let none = GcpCredential {
                bearer: String::new(),
            };
            b = b.with_credentials(Arc::new(StaticCredentialProvider::new(none)));
        } else {
            // ADC's first source; object_store reads gcloud's file and the metadata server itself.
            if let Some(path) = std::env::var("GOOGLE_APPLICATION_CREDENTIALS")
                .ok()
                .filter(|p| !p.is_empty())
            {
                b = b.with_application_credentials(path);
            }
        }
        let gcs = b
            .build()
            .map_err(|e| fail(format!("GCS client: {}", short(&e))))?;
        Ok(Arc::new(gcs))
    }
}

impl Connect for GcsConnect {
    fn connect(&self) -> BoxFuture<'_, Result<Arc<dyn ObjectStore>, Error>> {
        Box::pin(async move { self.build() })
    }
}

/// Cloud Storage bucket names: 3–63 characters (up to 222 with dots, each
/// dot-separated part at most 63) of lowercase letters, digits, `-`, `_` and
/// `.`, starting and ending with a letter or digit.
fn gcs_bucket(b: &str) -> bool {
    let edge = |c: Option<u8>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let max = if b.contains('.') { 222 } else { 63 };
    (3..=max).contains(&b.len())
        && b.split('.').all(|p| !p.is_empty() && p.len() <= 63)
        && edge(b.bytes().next())
        && edge(b.bytes().last())
        && b.bytes().all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'-' | b'_' | b'.')
        })
        && !b.starts_with("goog")
}

/// The Cloud Storage keyset store. Open it through the registry ([`crate::register_gcs`]).
#[derive(Debug)]
pub struct GcsStore(ObjectDocument<GcsConnect>);

impl GcsStore {
    /// A store for `gs://<bucket>/<object>` (the client is built on first use).
    ///
    /// # Errors
    /// [`ProviderError::InvalidUri`].
    pub fn open(config: GcsConfig, uri: &str) -> Result<Self, Error> {
        ObjectDocument::open(crate::GCS_SCHEME, uri, gcs_bucket, |uri, bucket| {
            GcsConnect {
                config,
                uri: uri.to_owned(),
                bucket: bucket.to_owned(),
            }
        })
        .map(Self)
    }
}

keyset_store_over_document!(GcsStore);

#[cfg(test)]
mod tests {
    use super::*;
    use stateseal::KeysetStore;

    #[test]
    fn bucket_names() {
        for ok in ["abc", "stateseal-keys", "my_bucket.example.com", "a1-b2"] {
            assert!(gcs_bucket(ok), "{ok}");
        }
        for bad in [
            "ab",
            "-abc",
            "abc-",
            "Upper",
            "has space",
            "goog-keys",
            "a..b",
            &"x".repeat(64),
        ] {
            assert!(!gcs_bucket(bad), "{bad}");
        }
        let c = GcsConfig::builder().build().expect("config");
        let s = GcsStore::open(c.clone(), "gs://stateseal-keys/fleet/keyset.json").expect("uri");
        assert_eq!(s.uri(), "gs://stateseal-keys/fleet/keyset.json");
        assert!(matches!(
            GcsStore::open(c, "gs://Upper/keyset.json"),
            Err(Error::Provider(ProviderError::InvalidUri { .. }))
        ));
    }
}
