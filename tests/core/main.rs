//! Integration tests of the core crate: the Python SDK's vectors and live interop.

mod boundary_json;
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
mod vectors_verify;
