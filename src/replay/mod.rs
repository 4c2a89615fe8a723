//! Replay stores: where a fleet records the single-use states it accepted,
//! so a second presentation anywhere is refused.
//!
//! A store is trusted for availability only. Whoever can write it can
//! refuse rounds (by recording ids first) or allow a replay (by deleting a
//! record), never forge, read or alter a state: keys are digests, and the
//! state itself never reaches the store. Use TLS and the store's ACLs.

mod memory;

use std::fmt;

pub use memory::MemoryReplayStore;

use crate::envelope::SingleUse;
use crate::error::Error;
pub use crate::future::BoxFuture;

/// Records single-use states fleet-wide: one atomic "set if absent, with an
/// expiry" per accepted state.
///
/// Implementations answer within a deadline of their own (and say which):
/// the boundary refuses a single-use state whose record did not land, so a
/// slow store must fail fast rather than hold the round. Multi-use states
/// never reach the store.
pub trait ReplayStore: Send + Sync + fmt::Debug {
    /// Records `single_use` until [`SingleUse::keep_until`] unless its key is
    /// already recorded: `Ok(true)` when this call recorded it (the state may
    /// be used), `Ok(false)` when it was there (a replay).
    ///
    /// # Errors
    /// [`Error::ReplayStore`] when the store cannot answer (unreachable,
    /// refused, past its deadline): the state is refused.
    fn record<'a>(&'a self, single_use: &'a SingleUse) -> BoxFuture<'a, Result<bool, Error>>;

    /// Where the store is, for logs and readiness (no credentials).
    fn uri(&self) -> &str;
}
