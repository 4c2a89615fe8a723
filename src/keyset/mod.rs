//! Keyset documents and the stores that hold them.
//!
//! The authenticated form, `stateseal.keyset/v2` ([`StoredKeyset`]), carries
//! the document as exact payload bytes under an HMAC-SHA256 tag whose key only
//! KEK holders can unwrap; `rotation::KeysetTrust` checks it in the design's
//! order (caps, envelope, pins, bound MAC-key unwrap, tag, payload, KEKs,
//! freshness).

mod claim;
mod conditional;
mod document;
mod file_store;
mod mac;
mod pins;
mod revocation;
mod rfc3339;
mod sealed;
mod store;
pub(crate) mod timing;

pub use claim::{INSTANCE_ID_RULE, RotationClaim, is_instance_id};
pub use conditional::{ConditionalLoad, StoreVersion};
pub(crate) use document::random_id;
pub use document::{
    ALG_V1_AES_256_GCM, ALG_V2_XAES_256_GCM, KEYSET_FORMAT, KeyEntry, Keyset, MAX_ENTRIES, alg_name,
};
pub use file_store::FileStore;
pub use mac::{MAC_PURPOSE, MacKey};
pub use pins::KeysetPins;
pub(crate) use revocation::dropped_live;
pub use revocation::{MAX_CLIENT_ID_LEN, MAX_REVOCATIONS, live_until, prunable};
pub use rfc3339::{MAX_TIME, is_representable};
pub(crate) use rfc3339::{document_time, format_rfc3339, is_representable_secs};
/// The document's RFC 3339 time format: exposed for tests and fuzzing only
/// (feature `internals`, no stability promise).
#[cfg(feature = "internals")]
pub use rfc3339::{format_rfc3339 as format_time, parse_rfc3339 as parse_time};
/// A stored document's content under a given MAC key: exposed for fuzzing
/// only (feature `internals`, no stability promise).
#[cfg(feature = "internals")]
pub use sealed::open_with;
pub use sealed::{KEYSET_FORMAT_V2, MAX_DOCUMENT_BYTES, MacKeyRef, StoredKeyset};
pub use store::KeysetStore;
pub use store::{NEWEST_COPY_SUFFIX, check_next_generation};
pub use timing::Timing;
