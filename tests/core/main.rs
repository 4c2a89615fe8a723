//! Integration tests of the core crate: the Python SDK's vectors and live interop.

mod boundary_json;
mod callers_buffers;
mod cheap_reads;
mod entry_rewrites;
mod fleet;
mod interop;
mod junk_documents;
mod keyset_integrity;
mod limits;
mod no_leak;
mod observability;
mod one_rotator;
mod outage;
mod provider_contract;
mod recorded;
mod restored_backups;
mod revocation;
mod revocation_document;
mod seal_budget;
mod setup;
mod single_use;
mod staleness;
mod store_contract;
mod store_faults;
mod timeline_props;
mod token_vectors;
mod vectors;
mod vectors_keys;
mod vectors_verify;

/// The data plane's instant for a key-plane time in seconds (the rotation
/// timeline's functions still take seconds since 1970 as `f64`).
pub(crate) fn ut(secs: f64) -> stateseal::UnixTime {
    stateseal::UnixTime::from_secs_f64(secs).expect("a finite time")
}
