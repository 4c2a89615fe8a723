//! `toy-mem://<object>`: a keyset store on an in-memory object store that
//! versions every object, as S3's ETags or GCS's generations do.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use stateseal::keyset::{ConditionalLoad, NEWEST_COPY_SUFFIX, StoreVersion, check_next_generation};
use stateseal::provider::BoxFuture;
use stateseal::{Error, KeysetError, KeysetStore, ProviderError, StoredKeyset};

/// The object store: objects by name, each with the version of its last
/// write, one credential that may read and write, and an outage switch.
#[derive(Debug)]
pub struct Bucket {
    objects: Mutex<Objects>,
    credential: String,
    available: AtomicBool,
}

#[derive(Debug, Default)]
struct Objects {
    by_name: HashMap<String, (u64, Vec<u8>)>,
    writes: u64,
}

impl Bucket {
    /// An empty bucket that `credential` may read and write.
    pub fn new(credential: &str) -> Self {
        Self {
            objects: Mutex::new(Objects::default()),
            credential: credential.to_owned(),
            available: AtomicBool::new(true),
        }
    }

    /// Writes `bytes` to `name` unconditionally, as an operator (or an
    /// attacker with write access) would.
    pub fn put(&self, name: &str, bytes: Vec<u8>) {
        let mut objects = self.lock();
        objects.writes += 1;
        let version = objects.writes;
        objects.by_name.insert(name.to_owned(), (version, bytes));
    }

    /// Makes the bucket reachable or not.
    pub fn set_available(&self, on: bool) {
        self.available.store(on, Ordering::SeqCst);
    }

    fn lock(&self) -> MutexGuard<'_, Objects> {
        self.objects.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A handle on one object of a [`Bucket`], presenting one credential.
#[derive(Debug, Clone)]
pub struct BucketStore {
    uri: String,
    object: String,
    bucket: Arc<Bucket>,
    credential: String,
}

impl BucketStore {
    /// The URI scheme: `toy-mem://<object name>`.
    pub const SCHEME: &'static str = "toy-mem";

    /// The store a `toy-mem://` URI names, in `bucket`.
    ///
    /// # Errors
    /// [`ProviderError::InvalidUri`] when the URI is not `toy-mem://<object>`.
    pub fn open(uri: &str, bucket: Arc<Bucket>, credential: &str) -> Result<Self, Error> {
        let object = uri
            .strip_prefix("toy-mem://")
            .filter(|o| !o.is_empty())
            .ok_or_else(|| {
                Error::Provider(ProviderError::InvalidUri {
                    uri: uri.to_owned(),
                    problem: "expected toy-mem://<object>".into(),
                })
            })?;
        Ok(Self {
            uri: uri.to_owned(),
            object: object.to_owned(),
            bucket,
            credential: credential.to_owned(),
        })
    }

    fn error(&self, problem: &str) -> Error {
        Error::Provider(ProviderError::Store {
            uri: self.uri.clone(),
            problem: problem.to_owned(),
        })
    }

    /// The bucket's objects, once it is reachable and the credential may use it.
    fn objects(&self) -> Result<MutexGuard<'_, Objects>, Error> {
        if !self.bucket.available.load(Ordering::SeqCst) {
            return Err(self.error("bucket unavailable"));
        }
        if self.credential != self.bucket.credential {
            return Err(self.error("access denied"));
        }
        Ok(self.bucket.lock())
    }

    /// The object's version and document, read under one lock.
    fn read(&self) -> Result<Option<(u64, StoredKeyset)>, Error> {
        let objects = self.objects()?;
        match objects.by_name.get(&self.object) {
            None => Ok(None),
            Some((version, bytes)) => Ok(Some((*version, StoredKeyset::from_bytes(bytes)?))),
        }
    }
}

impl KeysetStore for BucketStore {
    fn uri(&self) -> &str {
        &self.uri
    }

    fn load(&self) -> BoxFuture<'_, Result<Option<StoredKeyset>, Error>> {
        Box::pin(async move { Ok(self.read()?.map(|(_, doc)| doc)) })
    }

    fn load_if_changed<'a>(
        &'a self,
        seen: Option<&'a StoreVersion>,
    ) -> BoxFuture<'a, Result<ConditionalLoad, Error>> {
        Box::pin(async move {
            let Some((version, document)) = self.read()? else {
                return Ok(ConditionalLoad::Current {
                    document: None,
                    version: None,
                });
            };
            let version = StoreVersion::new(version.to_string());
            if seen == Some(&version) {
                return Ok(ConditionalLoad::Unchanged);
            }
            Ok(ConditionalLoad::Current {
                document: Some(document),
                version: Some(version),
            })
        })
    }

    fn compare_and_swap<'a>(
        &'a self,
        expected: Option<u64>,
        doc: &'a StoredKeyset,
    ) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            check_next_generation(&self.uri, expected, doc)?;
            // One lock from the check to the write: exactly one racer wins.
            let mut objects = self.objects()?;
            let found = match objects.by_name.get(&self.object) {
                None => None,
                Some((_, bytes)) => Some(StoredKeyset::from_bytes(bytes)?.generation()),
            };
            if found != expected {
                return Err(KeysetError::Conflict { expected, found }.into());
            }
            objects.writes += 1;
            let version = objects.writes;
            let bytes = doc.bytes().to_vec();
            objects
                .by_name
                .insert(self.object.clone(), (version, bytes));
            Ok(())
        })
    }

    fn newest_copy(&self) -> Option<Box<dyn KeysetStore>> {
        Some(Box::new(Self {
            uri: format!("{}{NEWEST_COPY_SUFFIX}", self.uri),
            object: format!("{}{NEWEST_COPY_SUFFIX}", self.object),
            ..self.clone()
        }))
    }
}
