//! The contract suites every [stateseal](https://docs.rs/stateseal) key
//! provider, keyset store and replay store must pass. stateseal's own
//! providers and stores (the file store, the `local` provider, Vault / OpenBao,
//! AWS KMS, Cloud KMS, S3, Cloud Storage, Redis) run exactly these suites;
//! a provider or store of yours runs them from its own tests:
//!
//! - [`provider`]: what a [`KeyProvider`](stateseal::KeyProvider) must do: a
//!   wrapped key unwraps only under the keyset, entry and purpose it was
//!   wrapped for (the binding probe: a provider that ignores the
//!   [`WrapContext`](stateseal::provider::WrapContext) fails, since the
//!   keyset's MAC key would then be forgeable); outages and failing
//!   credentials are `Transient`, a revocation is `Denied`; cached keys ride
//!   out an outage and are dropped after a revocation;
//! - [`store`]: what a [`KeysetStore`](stateseal::KeysetStore) must do:
//!   create-if-absent, compare-and-swap under truly concurrent writers,
//!   documents loaded back byte for byte, garbage and oversized documents as
//!   errors (never "no keyset"), outages and denied credentials as errors,
//!   conditional reads that never call a changed document unchanged;
//! - [`integrity`]: what someone who can write your store but holds no KEK can
//!   do to a keyset in it (nothing the fleet adopts), run after [`store`];
//! - [`replay`]: what a [`ReplayStore`](stateseal::replay::ReplayStore) for
//!   single-use states must do.
//!
//! [`member`] and [`keysets`] are the fixtures the suites drive (a fleet member
//! on a manual clock, keyset documents read and written as a KEK holder
//! would); they serve your own tests as well.
//!
//! The suites are tests: like `assert!`, they panic on the first rule broken,
//! with a message that says which rule (the provider suite's name the case:
//! `provider contract <kek>: binding: separator: …`), so a failing suite fails
//! your `#[test]` with the reason. No error type is needed, and none is
//! offered: a suite either returns or fails the test. A case your service cannot take part in (a local KEK has no
//! network to cut) is skipped when your harness says why, and the run prints
//! the reason. They need a Tokio runtime (a `#[tokio::test(flavor =
//! "multi_thread")]`), and nothing else: no server, no test kit.
//!
//! The file store under [`store::run`] and [`integrity::run`]:
//!
//! ```
//! use std::path::PathBuf;
//! use std::sync::Arc;
//! use stateseal::{FileStore, KeysetStore};
//! use stateseal_contract::store::StoreUnderTest;
//!
//! struct File(PathBuf);
//!
//! impl StoreUnderTest for File {
//!     fn open(&self) -> Arc<dyn KeysetStore> {
//!         Arc::new(FileStore::new(&self.0))
//!     }
//!     fn put_raw(&self, json: &serde_json::Value) {
//!         std::fs::write(&self.0, json.to_string()).unwrap();
//!     }
//!     // An outage of a file: a directory where the document should be.
//!     fn break_service(&self) {
//!         std::fs::rename(&self.0, self.0.with_extension("away")).unwrap();
//!         std::fs::create_dir(&self.0).unwrap();
//!     }
//!     fn repair_service(&self) {
//!         std::fs::remove_dir(&self.0).unwrap();
//!         std::fs::rename(self.0.with_extension("away"), &self.0).unwrap();
//!     }
//!     // A path under a regular file: no process may read or write there.
//!     fn denied(&self) -> Result<Arc<dyn KeysetStore>, &'static str> {
//!         Ok(Arc::new(FileStore::new(self.0.join("keyset.json"))))
//!     }
//! }
//!
//! # let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
//! # rt.block_on(async {
//! let dir = std::env::temp_dir().join(format!("contract-doc-{}", std::process::id()));
//! # let _ = std::fs::remove_dir_all(&dir);
//! std::fs::create_dir_all(&dir).unwrap();
//! let file = File(dir.join("keyset.json"));
//! stateseal_contract::store::run(&file).await;
//! stateseal_contract::integrity::run(&file, &dir).await;
//! # let _ = std::fs::remove_dir_all(&dir);
//! # });
//! ```
//!
//! A provider runs [`provider::run`] with a [`provider::ProviderUnderTest`];
//! `examples/outside-provider` in the stateseal repository is a complete
//! provider and store, written against the published crates only, and the
//! guide that walks through it is `docs/extending.md`.

#![forbid(unsafe_code)]

mod binding;
mod failure;
pub mod integrity;
pub mod keysets;
pub mod member;
pub mod provider;
pub mod replay;
pub mod store;

/// The instant `t` seconds after the epoch, as both planes take it (the
/// suites' times are seconds).
///
/// # Panics
/// When `t` is not finite.
pub(crate) fn instant(t: f64) -> stateseal::UnixTime {
    stateseal::UnixTime::from_secs_f64(t).expect("a finite time")
}

#[cfg(test)]
mod tests {
    /// Every public type may cross threads: suites run on multi-threaded
    /// runtimes, and a harness may share them between tasks.
    #[test]
    fn public_types_are_send_and_sync() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<crate::integrity::CountingLocal>();
        send_sync::<crate::integrity::PlaintextWrap>();
        send_sync::<crate::member::Member>();
        send_sync::<crate::replay::States>();
    }
}
