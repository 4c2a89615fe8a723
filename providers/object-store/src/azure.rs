//! `az-blob://<account>/<container>/<blob>`: the keyset document as one
//! Azure block blob.
//!
//! ETags are the versions: the first write carries `If-None-Match: *`, later
//! ones `If-Match: <ETag read>`; Blob Storage answers a stale or duplicate
//! write with `412` or `409`, so concurrent rotations land exactly once.
//! Reads after the first are conditional (`If-None-Match`, `304`).

use std::sync::Arc;

use object_store::ObjectStore;
use object_store::azure::MicrosoftAzureBuilder;
use stateseal::provider::{BoxFuture, check_endpoint, is_loopback_http};
use stateseal::{Error, ProviderError, StoredKeyset};

use crate::document::{
    Connect, Limits, ObjectDocument, keyset_store_over_document, limit_setters, short,
};

/// Settings of the Blob Storage store, built with [`AzureBlobConfig::builder`]
/// or [`AzureBlobConfig::from_env`].
///
/// ```
/// use stateseal_object_store::AzureBlobConfig;
/// let config = AzureBlobConfig::builder()
///     .endpoint("http://127.0.0.1:10000/devstoreaccount1")
///     .build()?;
/// assert_eq!(config.endpoint(), Some("http://127.0.0.1:10000/devstoreaccount1"));
/// # Ok::<(), stateseal::Error>(())
/// ```
#[derive(Clone, Default)]
pub struct AzureBlobConfig {
    endpoint: Option<String>,
    access_key: Option<String>,
    limits: Limits,
}

impl std::fmt::Debug for AzureBlobConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AzureBlobConfig")
            .field("endpoint", &self.endpoint)
            .field(
                "access_key",
                &self.access_key.as_ref().map(|_| "[redacted]"),
            )
            .finish_non_exhaustive()
    }
}

/// Builds an [`AzureBlobConfig`].
#[derive(Debug, Clone, Default)]
pub struct AzureBlobConfigBuilder(AzureBlobConfig);

impl AzureBlobConfig {
    /// Starts from the defaults: `https://<account>.blob.core.windows.net`,
    /// credentials from the `AZURE_*` variables (see the crate docs); 10 s per
    /// operation, 3 s per attempt, 2 s to connect, 3 attempts.
    pub fn builder() -> AzureBlobConfigBuilder {
        AzureBlobConfigBuilder::default()
    }

    /// Reads `STATESEAL_AZURE_BLOB_ENDPOINT` (the account's blob endpoint,
    /// e.g. Azurite's `http://127.0.0.1:10000/devstoreaccount1`; `https://…`,
    /// or `http://` to a loopback address). Credentials come from Azure's own
    /// variables when the store connects.
    ///
    /// # Errors
    /// [`Error::Config`] naming the variable.
    pub fn from_env() -> Result<Self, Error> {
        let mut b = Self::builder();
        if let Some(e) = std::env::var("STATESEAL_AZURE_BLOB_ENDPOINT")
            .ok()
            .filter(|v| !v.is_empty())
        {
            b = b.endpoint(e);
        }
        b.build()
            .map_err(|e| Error::Config(format!("STATESEAL_AZURE_BLOB_ENDPOINT: {e}")))
    }

    /// The endpoint override, if any.
    pub fn endpoint(&self) -> Option<&str> {
        self.endpoint.as_deref()
    }
}

impl AzureBlobConfigBuilder {
    /// Sends every request to this blob endpoint (the account's URL, path included).
    #[must_use]
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.0.endpoint = Some(url.into());
        self
    }

    /// Signs with this storage account key (Shared Key) instead of Entra ID
    /// credentials: for Azurite, or accounts that still allow keys. It prints redacted.
    #[must_use]
    pub fn access_key(mut self, key: impl Into<String>) -> Self {
        self.0.access_key = Some(key.into());
        self
    }

    limit_setters!();

    /// Checks and builds the configuration.
    ///
    /// # Errors
    /// [`Error::Config`] for out-of-range timeouts or attempts, or an endpoint
    /// that is neither `https://…` nor `http://` to a loopback address.
    pub fn build(self) -> Result<AzureBlobConfig, Error> {
        let c = self.0;
        c.limits.check("az-blob")?;
        if let Some(url) = &c.endpoint {
            check_endpoint("az-blob", url)?;
        }
        Ok(c)
    }
}

#[derive(Debug)]
struct AzureConnect {
    config: AzureBlobConfig,
    uri: String,
    account: String,
    container: String,
}

impl AzureConnect {
    fn build(&self) -> Result<Arc<dyn ObjectStore>, Error> {
        let c = &self.config;
        // Azure's variables: AZURE_CLIENT_ID, AZURE_TENANT_ID and AZURE_FEDERATED_TOKEN_FILE
        // (workload identity), AZURE_CLIENT_SECRET, AZURE_STORAGE_ACCOUNT_KEY, AZURE_USE_AZURE_CLI;
        // with none of them, the managed identity.
        let mut b = MicrosoftAzureBuilder::from_env()
            .with_account(&self.account)
            .with_container_name(&self.container)
            .with_retry(c.limits.retry());
        let mut allow_http = false;
        if let Some(url) = c.endpoint() {
            check_endpoint("az-blob", url)?;
            allow_http = is_loopback_http(url);
            b = b.with_endpoint(url.to_owned());
        }
        if let Some(key) = &c.access_key {
            b = b.with_access_key(key);
        }
        let azure = b
            .with_client_options(c.limits.client_options(allow_http))
            .build()
            .map_err(|e| {
                Error::Provider(ProviderError::Store {
                    uri: self.uri.clone(),
                    problem: format!("Blob Storage client: {}", short(&e)),
                })
            })?;
        Ok(Arc::new(azure))
    }
}

impl Connect for AzureConnect {
    fn connect(&self) -> BoxFuture<'_, Result<Arc<dyn ObjectStore>, Error>> {
        Box::pin(async move { self.build() })
    }
}

/// `<account>/<container>`: an account name is 3–24 lowercase letters and
/// digits; a container name 3–63 lowercase letters, digits and single dashes,
/// starting and ending with a letter or digit.
fn account_and_container(s: &str) -> bool {
    let Some((account, container)) = s.split_once('/') else {
        return false;
    };
    let account_ok = (3..=24).contains(&account.len())
        && account
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let container_ok = (3..=63).contains(&container.len())
        && container
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        && !container.starts_with('-')
        && !container.ends_with('-')
        && !container.contains("--");
    account_ok && container_ok
}

/// The Blob Storage keyset store. Open it through the registry ([`crate::register_azure`]).
#[derive(Debug)]
pub struct AzureBlobStore(ObjectDocument<AzureConnect>);

impl AzureBlobStore {
    /// A store for `az-blob://<account>/<container>/<blob>` (the client is built on first use).
    ///
    /// # Errors
    /// [`ProviderError::InvalidUri`].
    pub fn open(config: AzureBlobConfig, uri: &str) -> Result<Self, Error> {
        ObjectDocument::open_nested(
            crate::AZURE_SCHEME,
            uri,
            "<account>/<container>",
            account_and_container,
            |uri, bucket| {
                let (account, container) = bucket.split_once('/').unwrap_or_default();
                AzureConnect {
                    config,
                    uri: uri.to_owned(),
                    account: account.to_owned(),
                    container: container.to_owned(),
                }
            },
        )
        .map(Self)
    }
}

keyset_store_over_document!(AzureBlobStore);

#[cfg(test)]
mod tests {
    use super::*;
    use stateseal::KeysetStore;
    use std::time::Duration;

    #[test]
    fn store_uris() {
        let c = || AzureBlobConfig::builder().build().expect("config");
        let uri = "az-blob://contoso/stateseal-keys/prod/keyset.json";
        assert_eq!(AzureBlobStore::open(c(), uri).expect("uri").uri(), uri);
        for bad in [
            "az-blob://contoso/stateseal-keys",
            "az-blob://contoso/keyset.json",
            "az-blob://Contoso/keys/k",
            "az-blob://co/keys/k",
            "az-blob://contoso/-keys/k",
            "az-blob://contoso/ke--ys/k",
            "az-blob://contoso/Keys/k",
            "az-blob://contoso/keys/a//b",
            "s3://contoso/keys/k",
        ] {
            let e = AzureBlobStore::open(c(), bad).unwrap_err();
            assert!(
                e.to_string().contains("az-blob://<account>/<container>/<"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn builder_checks_and_redaction() {
        for bad in [
            AzureBlobConfig::builder().max_attempts(0),
            AzureBlobConfig::builder().endpoint("http://localhost:10000/devstoreaccount1"),
            AzureBlobConfig::builder().endpoint("http://stateseal.invalid:10000/a"),
            AzureBlobConfig::builder().operation_timeout(Duration::ZERO),
        ] {
            let e = bad.build().unwrap_err();
            assert!(
                e.to_string().starts_with("invalid configuration: az-blob:"),
                "{e}"
            );
        }
        let c = AzureBlobConfig::builder()
            .access_key("c2VjcmV0LWtleQ==")
            .build()
            .unwrap();
        assert!(!format!("{c:?}").contains("c2VjcmV0"), "{c:?}");
    }
}
