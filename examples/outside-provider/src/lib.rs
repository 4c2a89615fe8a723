//! A key provider and a keyset store written as an outside project writes
//! them: against `stateseal`'s public API only, tested with the published
//! `stateseal-contract` suites (`tests/contracts.rs`). The worked example of
//! stateseal's `docs/extending.md`.
//!
//! - [`Hsm`]: an in-memory stand-in for an HSM or a cloud KMS: named AES-256
//!   keys, encrypt and decrypt with associated data, and the failures a real
//!   one has (unreachable, expired token, key disabled);
//! - [`HsmProvider`]: the `toy-hsm://<key>` provider over it, binding every
//!   wrap to its [`WrapContext`](stateseal::provider::WrapContext) as
//!   AES-GCM associated data;
//! - [`Bucket`] and [`BucketStore`]: an in-memory object store with
//!   versions, and the `toy-mem://<object>` keyset store on it
//!   (compare-and-swap on the generation, conditional reads, a newest copy).
//!
//! ```
//! use std::sync::Arc;
//! use outside_provider::{Bucket, Hsm};
//! use stateseal::ProviderRegistry;
//!
//! let hsm = Arc::new(Hsm::new());
//! hsm.create_key("fleet");
//! let bucket = Arc::new(Bucket::new("fleet-token"));
//! let mut registry = ProviderRegistry::with_defaults();
//! outside_provider::register(&mut registry, hsm, bucket, "fleet-token");
//! assert!(registry.provider_for("toy-hsm://fleet").is_ok());
//! assert!(registry.open_store("toy-mem://keysets/prod.json").is_ok());
//! ```

#![forbid(unsafe_code)]

mod hsm;
mod provider;
mod store;

// docs/extending.md walks through this crate: its compiled examples run as
// this crate's doctests, and tests/guide.rs checks that its excerpts are the code.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/extending.md")]
mod extending_guide {}

use std::sync::Arc;

pub use hsm::{Hsm, HsmError};
pub use provider::HsmProvider;
pub use store::{Bucket, BucketStore};

use stateseal::{KeysetStore, ProviderRegistry};

/// Registers the `toy-hsm` provider over `hsm` and the `toy-mem` store over
/// `bucket`, whose handles present `credential`.
pub fn register(
    registry: &mut ProviderRegistry,
    hsm: Arc<Hsm>,
    bucket: Arc<Bucket>,
    credential: &str,
) {
    registry.register_provider(Arc::new(HsmProvider::new(hsm)));
    let credential = credential.to_owned();
    registry.register_store(BucketStore::SCHEME, move |uri| {
        let store = BucketStore::open(uri, bucket.clone(), &credential)?;
        Ok(Arc::new(store) as Arc<dyn KeysetStore>)
    });
}
