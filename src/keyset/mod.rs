//! Keyset documents and the stores that hold them.

mod document;
mod store;

pub use document::{KEYSET_FORMAT, KeyEntry, Keyset, format_rfc3339, parse_rfc3339, random_id};
pub use store::check_next_generation;
pub use store::{FileStore, KeysetStore};
