//! The `file://` keyset store: one local file, written by rename under a
//! writers' lock, with conditional reads from the file's identity.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};

use super::conditional::{ConditionalLoad, FileVersion, StoreVersion, file_identity};
use super::document::random_id;
use super::sealed::{MAX_DOCUMENT_BYTES, StoredKeyset};
use super::store::{KeysetStore, NEWEST_COPY_SUFFIX, check_next_generation};
use crate::error::{Error, KeysetError, ProviderError};
use crate::future::BoxFuture;

/// Reads at most [`MAX_DOCUMENT_BYTES`] + 1 bytes from `reader` and parses the
/// envelope: a pathological document costs one bounded read.
///
/// # Errors
/// [`KeysetError::Invalid`] for an oversized or malformed document; I/O errors as `io`.
pub(crate) fn read_bounded(
    reader: impl std::io::Read,
) -> Result<Result<StoredKeyset, Error>, std::io::Error> {
    use std::io::Read;
    let mut bytes = Vec::new();
    reader
        .take(MAX_DOCUMENT_BYTES as u64 + 1)
        .read_to_end(&mut bytes)?;
    Ok(StoredKeyset::from_bytes(&bytes))
}

/// Flushes `dir` (the rename in it) to disk.
fn sync_directory(dir: &Path) -> std::io::Result<()> {
    #[cfg(test)]
    if tests::DIRECTORY_SYNC_FAILS.get() {
        return Err(std::io::Error::other("injected: directory fsync failed"));
    }
    File::open(dir)?.sync_all()
}

/// Mode of a keyset file this store creates (an existing file keeps its own).
const NEW_FILE_MODE: u32 = 0o600;

/// The writers' lock on `<document>.lock`, released by an explicit unlock when
/// dropped. Closing the descriptor alone would not release it while another
/// copy of the descriptor is open: a child forked during a write (pre-fork
/// servers) inherits one, and would then wait on the lock forever.
struct WriterLock(File);

impl WriterLock {
    fn acquire(path: &Path) -> Result<Self, (&'static str, std::io::Error)> {
        // Never through a symbolic link (it would create or lock a file elsewhere),
        // and private whatever the umask. Whoever could swap the link in between
        // can write the keyset directory, and so the document itself.
        if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err((
                "open lock file",
                std::io::Error::new(
                    ErrorKind::InvalidInput,
                    "it is a symbolic link, which the store does not follow",
                ),
            ));
        }
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(NEW_FILE_MODE)
            .open(path)
            .map_err(|e| ("open lock file", e))?;
        file.lock().map_err(|e| ("lock", e))?;
        Ok(Self(file))
    }
}

impl Drop for WriterLock {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

/// A keyset in a local file (`file://<path>`): the embedded default.
///
/// Writes take an exclusive lock on `<path>.lock` (held across processes),
/// re-read the generation, write a temporary file in the same directory, fsync
/// it, rename it over the document and fsync the directory, so a reader never
/// sees a torn document and concurrent writers cannot both win. New documents
/// are created `0600`; an existing one keeps its mode; temporary files left by
/// a killed writer are removed by the next write.
///
/// The lock is an advisory `flock`, which network file systems (NFS, SMB) do
/// not reliably share between hosts: this store is for one host. A fleet on
/// several hosts keeps its keyset in Vault KV, S3 or another shared store with
/// compare-and-swap.
///
/// ```
/// use stateseal::{FileStore, KeysetStore};
/// let store = FileStore::from_uri("file:///var/lib/stateseal/keyset.json")?;
/// assert_eq!(store.uri(), "file:///var/lib/stateseal/keyset.json");
/// # Ok::<(), stateseal::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct FileStore {
    uri: String,
    path: PathBuf,
}

impl FileStore {
    /// URI scheme of this store.
    pub const SCHEME: &'static str = "file";

    /// A store at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        Self {
            uri: format!("file://{}", path.display()),
            path,
        }
    }

    /// A store from a `file:` URI (RFC 8089): `file:///abs/path` or
    /// `file://localhost/abs/path`. `file://relative/path` is refused: its
    /// first segment would be a host name, and a keyset that moves with the
    /// working directory is a keyset the fleet does not share.
    ///
    /// # Errors
    /// [`ProviderError::InvalidUri`] for another scheme or an empty path.
    pub fn from_uri(uri: &str) -> Result<Self, Error> {
        let invalid = |problem: &str| {
            Error::Provider(ProviderError::InvalidUri {
                uri: uri.to_owned(),
                problem: problem.to_owned(),
            })
        };
        let rest = uri
            .strip_prefix("file://")
            .ok_or_else(|| invalid("expected file:///absolute/path"))?;
        let path = rest.strip_prefix("localhost").unwrap_or(rest);
        if !path.starts_with('/') || path.len() < 2 {
            return Err(invalid(
                "a file store needs an absolute path: file:///absolute/path (three slashes) \
                 or file://localhost/absolute/path",
            ));
        }
        Ok(Self {
            uri: uri.to_owned(),
            path: PathBuf::from(path),
        })
    }

    /// The document's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn io(&self, what: &str, e: &std::io::Error) -> Error {
        Error::Provider(ProviderError::Store {
            uri: self.uri.clone(),
            problem: format!("{what}: {e}"),
        })
    }

    fn read(&self) -> Result<Option<StoredKeyset>, Error> {
        match File::open(&self.path).and_then(read_bounded) {
            Ok(parsed) => parsed.map(Some),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.io("read", &e)),
        }
    }

    /// A `stat` when the document is the one read at `seen` (a settled
    /// identity), else a read compared by digest (see `FileVersion`).
    fn read_if_changed(&self, seen: Option<&StoreVersion>) -> Result<ConditionalLoad, Error> {
        use std::io::Read;
        let now = std::time::SystemTime::now();
        if let Some(seen) = seen
            && let Ok(meta) = fs::metadata(&self.path)
            && FileVersion::identity_matches(seen, file_identity(&meta, now).as_deref())
        {
            return Ok(ConditionalLoad::Unchanged);
        }
        let read = File::open(&self.path).and_then(|f| {
            let meta = f.metadata()?;
            let mut bytes = Vec::new();
            f.take(MAX_DOCUMENT_BYTES as u64 + 1)
                .read_to_end(&mut bytes)?;
            Ok((FileVersion::new(&meta, &bytes, now), bytes))
        });
        match read {
            Ok((version, _)) if seen.is_some_and(|s| version.digest_matches(s)) => {
                Ok(ConditionalLoad::Unchanged)
            }
            Ok((version, bytes)) => Ok(ConditionalLoad::Current {
                document: Some(StoredKeyset::from_bytes(&bytes)?),
                version: Some(version.to_version()),
            }),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(ConditionalLoad::Current {
                document: None,
                version: None,
            }),
            Err(e) => Err(self.io("read", &e)),
        }
    }

    fn temporary_prefix(&self) -> std::ffi::OsString {
        let mut prefix = self
            .path
            .file_name()
            .map(std::ffi::OsStr::to_os_string)
            .unwrap_or_default();
        prefix.push(".tmp-");
        prefix
    }

    fn temporary_name(&self) -> Result<PathBuf, Error> {
        let mut name = self.temporary_prefix();
        name.push(random_id("")?);
        Ok(self.path.with_file_name(name))
    }

    fn remove_stale_temporaries(&self, dir: &Path) {
        let prefix = self.temporary_prefix();
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            if entry
                .file_name()
                .as_encoded_bytes()
                .starts_with(prefix.as_encoded_bytes())
            {
                let _ = fs::remove_file(entry.path());
            }
        }
    }

    fn cas_blocking(&self, expected: Option<u64>, doc: &StoredKeyset) -> Result<(), Error> {
        check_next_generation(&self.uri, expected, doc)?;
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let mut lock_path = self.path.clone().into_os_string();
        lock_path.push(".lock");
        let lock =
            WriterLock::acquire(Path::new(&lock_path)).map_err(|(what, e)| self.io(what, &e))?;
        let found = self.read()?.map(|d| d.generation());
        if found != expected {
            return Err(Error::Keyset(KeysetError::Conflict { expected, found }));
        }
        // Holding the lock, no other writer is mid-write: any temporary file left
        // beside the document is from a writer that was killed.
        self.remove_stale_temporaries(&dir);
        // A random name, so no two writers (or a recycled pid) ever share one.
        let tmp = self.temporary_name()?;
        // The operator's permission bits, never setuid, setgid or sticky.
        let mode = match fs::metadata(&self.path) {
            Ok(m) => m.permissions().mode() & 0o777,
            Err(_) => NEW_FILE_MODE,
        };
        let result = (|| {
            let mut f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(NEW_FILE_MODE)
                .open(&tmp)?;
            // An existing document keeps the mode its operator gave it.
            f.set_permissions(fs::Permissions::from_mode(mode))?;
            f.write_all(doc.bytes())?;
            f.sync_all()?;
            fs::rename(&tmp, &self.path)
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        } else if let Err(e) = sync_directory(&dir) {
            // The rename is the write: every reader sees the new document now,
            // so reporting a failure would send the writer back to retry on a
            // generation that is gone. Only durability across a crash is in doubt.
            tracing::warn!(store = %self.uri, error = %e, "the keyset was written, but its directory could not be flushed to disk: a crash before the next flush may bring back the previous document");
        }
        drop(lock);
        result.map_err(|e| self.io("write", &e))
    }
}

impl KeysetStore for FileStore {
    fn uri(&self) -> &str {
        &self.uri
    }

    fn load(&self) -> BoxFuture<'_, Result<Option<StoredKeyset>, Error>> {
        let this = self.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || this.read())
                .await
                .map_err(|e| {
                    Error::Provider(ProviderError::Store {
                        uri: String::new(),
                        problem: format!("read task failed: {e}"),
                    })
                })?
        })
    }

    fn load_if_changed<'a>(
        &'a self,
        seen: Option<&'a StoreVersion>,
    ) -> BoxFuture<'a, Result<ConditionalLoad, Error>> {
        let this = self.clone();
        let seen = seen.cloned();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || this.read_if_changed(seen.as_ref()))
                .await
                .map_err(|e| {
                    Error::Provider(ProviderError::Store {
                        uri: String::new(),
                        problem: format!("read task failed: {e}"),
                    })
                })?
        })
    }

    fn compare_and_swap<'a>(
        &'a self,
        expected: Option<u64>,
        doc: &'a StoredKeyset,
    ) -> BoxFuture<'a, Result<(), Error>> {
        let this = self.clone();
        let doc = doc.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || this.cas_blocking(expected, &doc))
                .await
                .map_err(|e| {
                    Error::Provider(ProviderError::Store {
                        uri: String::new(),
                        problem: format!("write task failed: {e}"),
                    })
                })?
        })
    }

    fn newest_copy(&self) -> Option<Box<dyn KeysetStore>> {
        let mut path = self.path.clone().into_os_string();
        path.push(NEWEST_COPY_SUFFIX);
        Some(Box::new(Self {
            uri: format!("{}{NEWEST_COPY_SUFFIX}", self.uri),
            path: path.into(),
        }))
    }
}

#[cfg(test)]
mod tests;
