//! Keyset documents and the stores that hold them.

mod document;
mod store;
mod timing;

pub use document::{KEYSET_FORMAT, KeyEntry, Keyset, MAX_TIME, is_representable};
pub(crate) use document::{document_time, random_id};
/// The document's RFC 3339 time format: exposed for tests and fuzzing only
/// (feature `internals`, no stability promise).
#[cfg(feature = "internals")]
pub use document::{format_rfc3339 as format_time, parse_rfc3339 as parse_time};
pub use store::check_next_generation;
pub use store::{FileStore, KeysetStore};
pub use timing::Timing;
