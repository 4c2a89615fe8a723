//! Replay stores: where a fleet records the single-use states it accepted,
//! so a second presentation anywhere is refused.
//!
//! A store is trusted for availability only. Whoever can write it can
//! refuse rounds (by recording ids first) or allow a replay (by deleting a
//! record), never forge, read or alter a state: keys are digests, and the
//! state itself never reaches the store. Use TLS and the store's ACLs.
//!
//! A store that can lose records (a restart without persistence, a flush, a
//! failover) must say so: each keeps an *epoch*, the time since which its
//! records are complete, and answers [`Recorded::BeforeEpoch`] for a state
//! issued before it (within the skew allowance), since a record of that
//! state may have been lost. The cost of a loss is then refused rounds, never
//! an accepted replay.

mod memory;

use std::fmt;

pub use memory::MemoryReplayStore;

use crate::envelope::SingleUse;
use crate::error::Error;
pub use crate::future::BoxFuture;

/// What a store answers for one presentation of a single-use state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Recorded {
    /// This presentation recorded the state (or recognised its own earlier
    /// write, retried): the state may be used.
    First,
    /// The state was recorded by another presentation: a replay.
    Replay,
    /// The state was issued before the store's epoch: records that could
    /// cover it may have been lost (the store restarted empty, was flushed or
    /// failed over since), so it is refused.
    BeforeEpoch,
}

/// Records single-use states fleet-wide: one atomic "set if absent, with an
/// expiry" per accepted state.
///
/// Implementations answer within a deadline of their own (and say which):
/// the boundary refuses a single-use state whose record did not land, so a
/// slow store must fail fast rather than hold the round. Multi-use states
/// never reach the store.
pub trait ReplayStore: Send + Sync + fmt::Debug {
    /// Records `single_use` until [`SingleUse::keep_until`] unless its key is
    /// already recorded or the state predates the store's epoch (see
    /// [`Recorded`]).
    ///
    /// # Errors
    /// [`ProviderError::ReplayStore`](crate::ProviderError::ReplayStore) when the store cannot answer (unreachable,
    /// refused, past its deadline, or configured so that it may lose records
    /// silently): the state is refused.
    fn record<'a>(&'a self, single_use: &'a SingleUse) -> BoxFuture<'a, Result<Recorded, Error>>;

    /// Connects and checks the store before the first state arrives (its
    /// settings, its epoch), so a problem shows at startup and a new store's
    /// epoch is set before states are issued against it. The default does
    /// nothing.
    ///
    /// # Errors
    /// As [`ReplayStore::record`]; the store stays usable, and every record
    /// tries again.
    fn prepare(&self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(std::future::ready(Ok(())))
    }

    /// Where the store is, for logs and readiness (no credentials).
    fn uri(&self) -> &str;
}
