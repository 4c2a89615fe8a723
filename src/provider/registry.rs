//! `ProviderRegistry`: URI scheme → key provider and keyset store. A value, not a global.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use super::{KeyProvider, LocalProvider};
use crate::error::{Error, ProviderError};
use crate::keyset::{FileStore, KeysetStore};
use crate::replay::{MemoryReplayStore, ReplayStore};
pub use crate::uri::scheme_of;

type StoreFactory = Arc<dyn Fn(&str) -> Result<Arc<dyn KeysetStore>, Error> + Send + Sync>;
type ReplayFactory = Arc<dyn Fn(&str, &str) -> Result<Arc<dyn ReplayStore>, Error> + Send + Sync>;

/// The in-process replay store's URI (one instance; a fleet needs a shared store).
pub const MEMORY_REPLAY_STORE: &str = "memory://";

/// Maps URI schemes to key providers (`local://`, `aws-kms://`, …) and keyset
/// stores (`file://`, `s3://`, …).
///
/// [`ProviderRegistry::with_defaults`] knows the embedded `file` store;
/// provider crates add theirs (`stateseal_aws_kms::register(&mut registry, …)`).
/// The embedded `local` provider (a KEK in a local file) is for development and
/// tests and must be asked for with [`ProviderRegistry::allow_local_kek`]: a
/// keyset document names its own KEKs, so a server whose registry knew
/// `local://` would read any key file an edited document pointed it at.
///
/// ```
/// use stateseal::ProviderRegistry;
/// let registry = ProviderRegistry::with_defaults();
/// let err = registry.provider_for("local:///etc/kek.bin").unwrap_err();
/// assert!(err.to_string().contains("allow_local_kek"));
///
/// let mut dev = ProviderRegistry::with_defaults();
/// dev.allow_local_kek();
/// assert!(dev.provider_for("local:///tmp/kek.bin").is_ok());
/// let err = dev.provider_for("aws-kms://arn:aws:kms:eu-west-1:1:key/x").unwrap_err();
/// assert!(err.to_string().contains("registered: file, local"));
/// ```
#[derive(Clone, Default)]
pub struct ProviderRegistry {
    providers: BTreeMap<String, Arc<dyn KeyProvider>>,
    stores: BTreeMap<String, StoreFactory>,
    replay_stores: BTreeMap<String, ReplayFactory>,
}

impl fmt::Debug for ProviderRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderRegistry")
            .field("providers", &self.providers.keys().collect::<Vec<_>>())
            .field("stores", &self.stores.keys().collect::<Vec<_>>())
            .field(
                "replay_stores",
                &self.replay_stores.keys().collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl ProviderRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// The `file` store (not the `local` provider: see [`ProviderRegistry::allow_local_kek`]).
    pub fn with_defaults() -> Self {
        let mut r = Self::new();
        r.register_store(FileStore::SCHEME, |uri| {
            Ok(Arc::new(FileStore::from_uri(uri)?) as Arc<dyn KeysetStore>)
        });
        r
    }

    /// Adds the `local` provider: KEKs in local files, for development, tests
    /// and single-host setups whose operator chose it. Never enable it in a
    /// server whose keyset document others can edit.
    pub fn allow_local_kek(&mut self) -> &mut Self {
        self.register_provider(Arc::new(LocalProvider::new()))
    }

    /// Adds (or replaces) the provider for its scheme.
    pub fn register_provider(&mut self, provider: Arc<dyn KeyProvider>) -> &mut Self {
        self.providers
            .insert(provider.scheme().to_owned(), provider);
        self
    }

    /// Adds (or replaces) the store for `scheme`, built from a URI by `open`.
    pub fn register_store(
        &mut self,
        scheme: &str,
        open: impl Fn(&str) -> Result<Arc<dyn KeysetStore>, Error> + Send + Sync + 'static,
    ) -> &mut Self {
        self.stores.insert(scheme.to_owned(), Arc::new(open));
        self
    }

    /// Adds (or replaces) the replay store for `scheme`, built by `open` from
    /// a URI and a key prefix (`stateseal_redis::register` adds `redis`,
    /// `rediss`, `redis-cluster` and `rediss-cluster`; `memory://` is built in).
    pub fn register_replay_store(
        &mut self,
        scheme: &str,
        open: impl Fn(&str, &str) -> Result<Arc<dyn ReplayStore>, Error> + Send + Sync + 'static,
    ) -> &mut Self {
        self.replay_stores.insert(scheme.to_owned(), Arc::new(open));
        self
    }

    /// Opens the replay store a URI names, its keys under `key_prefix`
    /// ([`MEMORY_REPLAY_STORE`]: this process's memory).
    ///
    /// # Errors
    /// [`ProviderError::InvalidUri`], [`ProviderError::UnknownScheme`] (listing the replay
    /// stores registered) or the store's own error.
    pub fn open_replay_store(
        &self,
        uri: &str,
        key_prefix: &str,
    ) -> Result<Arc<dyn ReplayStore>, Error> {
        if uri == MEMORY_REPLAY_STORE {
            return Ok(Arc::new(MemoryReplayStore::new()));
        }
        let scheme = scheme_of(uri)?;
        let open = self.replay_stores.get(scheme).ok_or_else(|| {
            let mut registered: Vec<&str> = self.replay_stores.keys().map(String::as_str).collect();
            registered.push("memory");
            registered.sort_unstable();
            Error::Provider(ProviderError::UnknownScheme {
                scheme: scheme.to_owned(),
                registered: registered.join(", "),
            })
        })?;
        open(uri, key_prefix)
    }

    fn registered(&self) -> String {
        let mut all: Vec<&str> = self
            .providers
            .keys()
            .chain(self.stores.keys())
            .map(String::as_str)
            .collect();
        all.sort_unstable();
        all.dedup();
        all.join(", ")
    }

    /// The provider for a KEK URI.
    ///
    /// # Errors
    /// [`ProviderError::InvalidUri`] or [`ProviderError::UnknownScheme`] (listing what is registered).
    pub fn provider_for(&self, kek_uri: &str) -> Result<Arc<dyn KeyProvider>, Error> {
        let scheme = scheme_of(kek_uri)?;
        if let Some(p) = self.providers.get(scheme) {
            return Ok(p.clone());
        }
        if scheme == LocalProvider::SCHEME {
            return Err(Error::Config(format!(
                "the keyset names a local:// KEK, which this registry does not accept; local KEKs are for development and are enabled with ProviderRegistry::allow_local_kek (registered: {})",
                self.registered()
            )));
        }
        Err(Error::Provider(ProviderError::UnknownScheme {
            scheme: scheme.to_owned(),
            registered: self.registered(),
        }))
    }

    /// Checks configured KEKs and pins (full URIs or prefixes ending in `/`)
    /// with their providers' [`KeyProvider::check_kek`]. A scheme no
    /// provider serves is left to the call that needs it.
    ///
    /// ```
    /// use stateseal::ProviderRegistry;
    /// let registry = ProviderRegistry::with_defaults();
    /// assert!(registry.check_keks(&["vault-kv://kv/".to_owned()]).is_ok());
    /// ```
    ///
    /// # Errors
    /// The first refusal, as the provider words it.
    pub fn check_keks(&self, keks: &[String]) -> Result<(), Error> {
        for kek in keks {
            if let Some(p) = scheme_of(kek).ok().and_then(|s| self.providers.get(s)) {
                p.check_kek(kek)?;
            }
        }
        Ok(())
    }

    /// Opens the keyset store a URI names.
    ///
    /// # Errors
    /// [`ProviderError::InvalidUri`], [`ProviderError::UnknownScheme`] or the store's own error.
    pub fn open_store(&self, store_uri: &str) -> Result<Arc<dyn KeysetStore>, Error> {
        let scheme = scheme_of(store_uri)?;
        let open = self.stores.get(scheme).ok_or_else(|| {
            Error::Provider(ProviderError::UnknownScheme {
                scheme: scheme.to_owned(),
                registered: self.registered(),
            })
        })?;
        open(store_uri)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_and_malformed() {
        let mut r = ProviderRegistry::with_defaults();
        let e = r.provider_for("local:///tmp/k").unwrap_err();
        assert!(matches!(e, Error::Config(_)), "{e}");
        assert!(e.to_string().contains("allow_local_kek"), "{e}");
        r.allow_local_kek();
        assert!(r.provider_for("local:///tmp/k").is_ok());
        assert!(r.open_store("file:///tmp/k.json").is_ok());
        let e = r.provider_for("gcp-kms://projects/p").unwrap_err();
        assert_eq!(
            e.to_string(),
            "no provider or store is registered for scheme \"gcp-kms\" (registered: file, local)"
        );
        for bad in ["", "local", "://x", "local://", "LOCAL://x", "lo cal://x"] {
            assert!(
                matches!(
                    r.provider_for(bad),
                    Err(Error::Provider(ProviderError::InvalidUri { .. }))
                ),
                "{bad:?}"
            );
        }
        assert!(matches!(
            r.open_store("s3://b/k"),
            Err(Error::Provider(ProviderError::UnknownScheme { .. }))
        ));
    }
}
