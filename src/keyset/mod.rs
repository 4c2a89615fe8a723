//! Keyset documents and the stores that hold them.

mod document;
mod store;
mod timing;

pub use document::{
    KEYSET_FORMAT, KeyEntry, Keyset, MAX_TIME, document_time, format_rfc3339, is_representable,
    parse_rfc3339, random_id,
};
pub use store::check_next_generation;
pub use store::{FileStore, KeysetStore};
pub use timing::Timing;
