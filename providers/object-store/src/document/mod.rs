//! The keyset document as one object, whatever the cloud: reads return the
//! object's version, and every write is conditional on it, so the loser of a
//! race gets `412 Precondition Failed` and nothing lands twice.
//!
//! The two clouds name the version differently: S3 conditions on the ETag
//! (`If-None-Match: *`, `If-Match`), GCS on the generation
//! (`x-goog-if-generation-match: 0`, then the generation read). `object_store`
//! speaks both through [`PutMode`]; this module passes it both fields of
//! what the read returned.

use std::sync::Arc;
use std::time::Duration;

use object_store::path::Path;
use object_store::{
    BackoffConfig, ClientOptions, GetOptions, ObjectStore, PutMode, PutOptions, PutPayload,
    RetryConfig, UpdateVersion,
};
use stateseal::keyset::check_next_generation;
use stateseal::keyset::{ConditionalLoad, MAX_DOCUMENT_BYTES, StoreVersion};
use stateseal::provider::BoxFuture;
use stateseal::{Error, KeysetError, ProviderError, StoredKeyset};
use tokio::sync::OnceCell;

/// Builds the client of one store on first use (credential chains may do I/O).
pub(crate) trait Connect: std::fmt::Debug + Send + Sync {
    fn connect(&self) -> BoxFuture<'_, Result<Arc<dyn ObjectStore>, Error>>;
}

/// One keyset object: `<scheme>://<bucket>/<object>`.
#[derive(Debug)]
pub(crate) struct ObjectDocument<C> {
    pub(crate) uri: String,
    path: Path,
    /// Shared with the newest copy beside it ([`ObjectDocument::beside`]).
    connect: Arc<C>,
    client: Arc<OnceCell<Arc<dyn ObjectStore>>>,
}

/// The version a read saw: what the next conditional write names.
struct Version(UpdateVersion);

/// What one (conditional) read of the object found (consumed at once).
#[allow(clippy::large_enum_variant)]
enum Fetched {
    /// `304 Not Modified`: still the version named.
    NotModified,
    /// No object.
    Missing,
    /// The document and the version it was read at.
    Found(StoredKeyset, Version),
}

impl<C: Connect> ObjectDocument<C> {
    /// Parses `uri` (`<scheme>://<bucket>/<object>`) with the cloud's bucket rule.
    #[cfg(any(feature = "s3", feature = "gcs"))]
    pub(crate) fn open(
        scheme: &str,
        uri: &str,
        bucket_ok: fn(&str) -> bool,
        connect: impl FnOnce(&str, &str) -> C,
    ) -> Result<Self, Error> {
        Self::open_nested(scheme, uri, "<bucket>", bucket_ok, connect)
    }

    /// As [`ObjectDocument::open`], where the bucket part has as many
    /// segments as `shape` (Azure's `<account>/<container>`).
    pub(crate) fn open_nested(
        scheme: &str,
        uri: &str,
        shape: &str,
        bucket_ok: fn(&str) -> bool,
        connect: impl FnOnce(&str, &str) -> C,
    ) -> Result<Self, Error> {
        let bad = || {
            Error::Provider(ProviderError::InvalidUri {
                uri: uri.to_owned(),
                problem: format!("expected {scheme}://{shape}/<object key>"),
            })
        };
        let rest = uri
            .strip_prefix(scheme)
            .and_then(|r| r.strip_prefix("://"))
            .ok_or_else(bad)?;
        let segments = shape.matches('/').count() + 1;
        let split = rest.match_indices('/').nth(segments - 1).map(|(i, _)| i);
        let (bucket, key) = split
            .map(|i| (&rest[..i], &rest[i + 1..]))
            .ok_or_else(bad)?;
        let key_ok = !key.is_empty()
            && key.split('/').all(|s| {
                !s.is_empty() && s != "." && s != ".." && !s.chars().any(char::is_control)
            });
        if !bucket_ok(bucket) || !key_ok {
            return Err(bad());
        }
        Ok(Self {
            uri: uri.to_owned(),
            path: Path::from(key),
            connect: Arc::new(connect(uri, bucket)),
            client: Arc::new(OnceCell::new()),
        })
    }

    /// The object `<key><suffix>` in the same bucket, through the same client.
    pub(crate) fn beside(&self, suffix: &str) -> Self {
        Self {
            uri: format!("{}{suffix}", self.uri),
            path: Path::from(format!("{}{suffix}", self.path)),
            connect: Arc::clone(&self.connect),
            client: Arc::clone(&self.client),
        }
    }

    pub(crate) fn error(&self, problem: impl Into<String>) -> Error {
        Error::Provider(ProviderError::Store {
            uri: self.uri.clone(),
            problem: problem.into(),
        })
    }

    async fn client(&self) -> Result<&Arc<dyn ObjectStore>, Error> {
        self.client.get_or_try_init(|| self.connect.connect()).await
    }

    /// The document and the version it was read at (`None`: no object).
    async fn read(&self) -> Result<Option<(StoredKeyset, Version)>, Error> {
        match self.fetch(None).await? {
            Fetched::Found(doc, version) => Ok(Some((doc, version))),
            Fetched::Missing | Fetched::NotModified => Ok(None),
        }
    }

    /// One read, conditional on the ETag `seen` when there is one (S3 and
    /// the GCS XML API both answer `If-None-Match` with `304`).
    async fn fetch(&self, seen: Option<&StoreVersion>) -> Result<Fetched, Error> {
        let client = self.client().await?;
        let options = GetOptions {
            if_none_match: seen.map(|v| v.as_str().to_owned()),
            ..GetOptions::default()
        };
        let got = match client.get_opts(&self.path, options).await {
            Ok(g) => g,
            Err(object_store::Error::NotFound { .. }) => return Ok(Fetched::Missing),
            Err(object_store::Error::NotModified { .. }) if seen.is_some() => {
                return Ok(Fetched::NotModified);
            }
            Err(e) => return Err(self.error(format!("read: {}", short(&e)))),
        };
        let version = UpdateVersion {
            e_tag: got.meta.e_tag.clone(),
            version: got.meta.version.clone(),
        };
        if version.e_tag.is_none() && version.version.is_none() {
            return Err(self.error(
                "the object has neither an ETag nor a generation; conditional writes need one",
            ));
        }
        // A pathological object costs its headers, not its body.
        if got.meta.size > MAX_DOCUMENT_BYTES as u64 {
            return Err(Error::Keyset(KeysetError::Invalid {
                field: "document".into(),
                problem: format!(
                    "{} bytes, more than the {MAX_DOCUMENT_BYTES} a keyset document may have",
                    got.meta.size
                ),
            }));
        }
        let bytes = got
            .bytes()
            .await
            .map_err(|e| self.error(format!("read: {}", short(&e))))?;
        Ok(Fetched::Found(
            StoredKeyset::from_bytes(&bytes)?,
            Version(version),
        ))
    }

    pub(crate) async fn load(&self) -> Result<Option<StoredKeyset>, Error> {
        Ok(self.read().await?.map(|(d, _)| d))
    }

    pub(crate) async fn load_if_changed(
        &self,
        seen: Option<&StoreVersion>,
    ) -> Result<ConditionalLoad, Error> {
        Ok(match self.fetch(seen).await? {
            Fetched::NotModified => ConditionalLoad::Unchanged,
            Fetched::Missing => ConditionalLoad::Current {
                document: None,
                version: None,
            },
            Fetched::Found(document, Version(v)) => ConditionalLoad::Current {
                document: Some(document),
                version: v.e_tag.map(StoreVersion::new),
            },
        })
    }

    pub(crate) async fn compare_and_swap(
        &self,
        expected: Option<u64>,
        doc: &StoredKeyset,
    ) -> Result<(), Error> {
        check_next_generation(&self.uri, expected, doc)?;
        let current = self.read().await?;
        let found = current.as_ref().map(|(d, _)| d.generation());
        if found != expected {
            return Err(Error::Keyset(KeysetError::Conflict { expected, found }));
        }
        let mode = match current {
            None => PutMode::Create,
            Some((_, Version(v))) => PutMode::Update(v),
        };
        let opts = PutOptions {
            mode,
            ..PutOptions::default()
        };
        let client = self.client().await?;
        match client
            .put_opts(&self.path, PutPayload::from(doc.bytes().to_vec()), opts)
            .await
        {
            Ok(_) => Ok(()),
            Err(
                object_store::Error::Precondition { .. }
                | object_store::Error::AlreadyExists { .. },
            ) => {
                // Another writer landed between our read and our write.
                let found = self.load().await.ok().flatten().map(|d| d.generation());
                Err(Error::Keyset(KeysetError::Conflict { expected, found }))
            }
            Err(e) => Err(self.error(format!("write: {}", short(&e)))),
        }
    }
}

/// `KeysetStore` for a newtype over [`ObjectDocument`] (each cloud's public store).
macro_rules! keyset_store_over_document {
    ($store:ty) => {
        impl stateseal::KeysetStore for $store {
            fn uri(&self) -> &str {
                &self.0.uri
            }

            fn load(&self) -> BoxFuture<'_, Result<Option<StoredKeyset>, Error>> {
                Box::pin(self.0.load())
            }

            fn load_if_changed<'a>(
                &'a self,
                seen: Option<&'a stateseal::keyset::StoreVersion>,
            ) -> BoxFuture<'a, Result<stateseal::keyset::ConditionalLoad, Error>> {
                Box::pin(self.0.load_if_changed(seen))
            }

            fn compare_and_swap<'a>(
                &'a self,
                expected: Option<u64>,
                doc: &'a StoredKeyset,
            ) -> BoxFuture<'a, Result<(), Error>> {
                Box::pin(self.0.compare_and_swap(expected, doc))
            }

            fn newest_copy(&self) -> Option<Box<dyn stateseal::KeysetStore>> {
                Some(Box::new(Self(
                    self.0.beside(stateseal::keyset::NEWEST_COPY_SUFFIX),
                )))
            }
        }
    };
}
pub(crate) use keyset_store_over_document;

/// The limit setters every store's configuration builder has (over `self.0.limits`).
macro_rules! limit_setters {
    () => {
        /// Total time for one read or write, retries included (default 10 s).
        #[must_use]
        pub fn operation_timeout(mut self, t: std::time::Duration) -> Self {
            self.0.limits.operation_timeout = t;
            self
        }

        /// Time for one attempt (default 3 s).
        #[must_use]
        pub fn attempt_timeout(mut self, t: std::time::Duration) -> Self {
            self.0.limits.attempt_timeout = t;
            self
        }

        /// Time to establish a connection (default 2 s).
        #[must_use]
        pub fn connect_timeout(mut self, t: std::time::Duration) -> Self {
            self.0.limits.connect_timeout = t;
            self
        }

        /// Attempts per operation, first try included (default 3).
        #[must_use]
        pub fn max_attempts(mut self, n: u32) -> Self {
            self.0.limits.max_attempts = n;
            self
        }
    };
}
pub(crate) use limit_setters;

/// An object_store error, one line, bounded (it names bucket and key, never credentials).
pub(crate) fn short(e: &object_store::Error) -> String {
    e.to_string()
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(300)
        .collect()
}

/// How long one store request may take, and how often it is tried.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Limits {
    pub(crate) operation_timeout: Duration,
    pub(crate) attempt_timeout: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) max_attempts: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            operation_timeout: Duration::from_secs(10),
            attempt_timeout: Duration::from_secs(3),
            connect_timeout: Duration::from_secs(2),
            max_attempts: 3,
        }
    }
}

impl Limits {
    /// `what: …` errors for limits no client can honour.
    pub(crate) fn check(&self, what: &str) -> Result<(), Error> {
        if self.max_attempts == 0 || self.max_attempts > 10 {
            return Err(Error::Config(format!(
                "{what}: max_attempts must be between 1 and 10"
            )));
        }
        if [
            self.operation_timeout,
            self.attempt_timeout,
            self.connect_timeout,
        ]
        .iter()
        .any(Duration::is_zero)
        {
            return Err(Error::Config(format!("{what}: timeouts must be positive")));
        }
        if self.attempt_timeout > self.operation_timeout {
            return Err(Error::Config(format!(
                "{what}: the attempt timeout must not exceed the operation timeout"
            )));
        }
        Ok(())
    }

    /// The HTTP client's options; plain HTTP only when the endpoint was checked to be loopback.
    pub(crate) fn client_options(&self, allow_http: bool) -> ClientOptions {
        ClientOptions::new()
            .with_timeout(self.attempt_timeout)
            .with_connect_timeout(self.connect_timeout)
            .with_allow_http(allow_http)
    }

    /// Bounded retries: object_store's own default retries for three minutes,
    /// longer than a refresh interval, so an outage would stall refreshes.
    pub(crate) fn retry(&self) -> RetryConfig {
        RetryConfig {
            backoff: BackoffConfig {
                init_backoff: Duration::from_millis(100),
                max_backoff: Duration::from_secs(2),
                base: 2.0,
            },
            max_retries: (self.max_attempts - 1) as usize,
            retry_timeout: self.operation_timeout,
        }
    }
}

#[cfg(test)]
mod tests;
