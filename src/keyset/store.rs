//! Where keyset documents live: the `KeysetStore` contract (the `file://`
//! store is in `file_store`).

use std::fmt;

use super::conditional::{ConditionalLoad, StoreVersion};
use super::sealed::StoredKeyset;
use crate::error::{Error, ProviderError};
use crate::future::BoxFuture;

/// A place that holds one keyset document, with compare-and-swap writes.
///
/// Every write names the generation it was based on; exactly one of several
/// concurrent writers based on the same generation wins, the others get
/// [`KeysetError::Conflict`](crate::KeysetError::Conflict) and must reload. This is what makes concurrent
/// rotations by many instances and operators safe without a coordinator.
pub trait KeysetStore: Send + Sync + fmt::Debug {
    /// The store's URI (for messages and `status`).
    fn uri(&self) -> &str;

    /// The current document as stored, not yet trusted (`rotation::KeysetTrust`
    /// verifies it), or `None` when the store holds none yet. A document larger
    /// than [`MAX_DOCUMENT_BYTES`](crate::keyset::MAX_DOCUMENT_BYTES) is refused after one bounded read.
    fn load(&self) -> BoxFuture<'_, Result<Option<StoredKeyset>, Error>>;

    /// The document, unless it is still the one read at version `seen`: a
    /// refresh that finds nothing new costs the store a conditional request
    /// (S3 and GCS `If-None-Match` on the ETag, a Vault KV metadata read, a
    /// file's `stat`) instead of a download, a parse and a tag check.
    ///
    /// The default reads in full and names no version (so it never answers
    /// [`ConditionalLoad::Unchanged`]); a store that can do better overrides it.
    fn load_if_changed<'a>(
        &'a self,
        seen: Option<&'a StoreVersion>,
    ) -> BoxFuture<'a, Result<ConditionalLoad, Error>> {
        let _ = seen;
        Box::pin(async move {
            Ok(ConditionalLoad::Current {
                document: self.load().await?,
                version: None,
            })
        })
    }

    /// Writes `doc` if the stored generation is still `expected` (`None`: the
    /// store must be empty). `doc`'s generation must be above `expected`.
    fn compare_and_swap<'a>(
        &'a self,
        expected: Option<u64>,
        doc: &'a StoredKeyset,
    ) -> BoxFuture<'a, Result<(), Error>>;

    /// The place beside this store that keeps a copy of the newest document
    /// ever written here (`<location>.newest`), or `None` when the store has
    /// none. Every write through `rotation` updates the copy; an operator's
    /// write reads it to notice it is built on a restored backup the running
    /// fleet has moved past, and refuses instead of writing a document the
    /// fleet would refuse. A store without a copy only loses that notice.
    fn newest_copy(&self) -> Option<Box<dyn KeysetStore>> {
        None
    }
}

/// What a store's [`KeysetStore::newest_copy`] location appends to its own.
pub const NEWEST_COPY_SUFFIX: &str = ".newest";

/// Checks a write before a store performs it (every store calls this): its
/// generation is above the one it was based on (servers write the next one;
/// operators may jump to a clock-derived floor, see `rotation::rotate_keyset`).
///
/// # Errors
/// [`ProviderError::Store`] when `doc`'s generation is not above `expected` (or is 0).
pub fn check_next_generation(
    uri: &str,
    expected: Option<u64>,
    doc: &StoredKeyset,
) -> Result<(), Error> {
    let least = expected.map_or(Some(1), |g| g.checked_add(1));
    match least {
        Some(least) if doc.generation() >= least => Ok(()),
        Some(least) => Err(Error::Provider(ProviderError::Store {
            uri: uri.to_owned(),
            problem: format!(
                "a write based on generation {expected:?} must carry generation {least} or above, not {}",
                doc.generation()
            ),
        })),
        None => Err(Error::Provider(ProviderError::Store {
            uri: uri.to_owned(),
            problem: "the generation is at its maximum; start a new keyset".to_owned(),
        })),
    }
}
