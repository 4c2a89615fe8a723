//! Which rounds mint single-use states, and recording them in the replay
//! store when they come back.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::envelope::{RequestIdentity, SingleUse};
use crate::reason::RejectReason;
use crate::replay::{Recorded, ReplayStore};

/// The boundary's single-use settings.
#[derive(Debug, Clone, Default)]
pub(super) struct SingleUseRounds {
    pub(super) store: Option<Arc<dyn ReplayStore>>,
    /// (method, target) pairs; a handful, so a scan beats hashing owned keys.
    pub(super) rounds: Vec<(String, String)>,
    /// Why the last record (or the preparation) failed, `None` while it
    /// worked (shared by the boundary's clones), for readiness detail: the
    /// store's error, its URI without credentials, never a key.
    pub(super) problem: Arc<Mutex<Option<String>>>,
}

impl SingleUseRounds {
    pub(super) fn add(&mut self, method: &str, target: &str) {
        if !self.covers_parts(method, target.as_bytes()) {
            self.rounds.push((method.to_owned(), target.to_owned()));
        }
    }

    pub(super) fn failing(&self) -> bool {
        self.lock_problem().is_some()
    }

    pub(super) fn lock_problem(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        // A panic elsewhere cannot leave an Option half-written.
        self.problem.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Connects the store ahead of the first state (settings, epoch); a
    /// failure is logged and kept for readiness, and every record tries again.
    pub(super) async fn prepare(&self) {
        let Some(store) = &self.store else { return };
        if let Err(e) = store.prepare().await {
            tracing::warn!(store = %store.uri(), error = %e, "replay store not usable yet: single-use states are refused until it is");
            *self.lock_problem() = Some(e.to_string());
        }
    }

    pub(super) fn covers(&self, round: &RequestIdentity) -> bool {
        self.covers_parts(round.method(), round.target().as_bytes())
    }

    fn covers_parts(&self, method: &str, target: &[u8]) -> bool {
        self.rounds
            .iter()
            .any(|(m, t)| m == method && t.as_bytes() == target)
    }

    /// Records `once`; the reason to refuse the state when that fails.
    pub(super) async fn record(&self, once: &SingleUse) -> Result<(), RejectReason> {
        let Some(store) = &self.store else {
            metrics::counter!("stateseal_replay_store_errors_total", "kind" => "none").increment(1);
            return Err(RejectReason::ReplayStoreUnavailable);
        };
        let started = Instant::now();
        let recorded = store.record(once).await;
        metrics::histogram!("stateseal_replay_store_seconds")
            .record(started.elapsed().as_secs_f64());
        *self.lock_problem() = recorded.as_ref().err().map(ToString::to_string);
        match recorded {
            Ok(Recorded::First) => Ok(()),
            Ok(Recorded::Replay) => {
                metrics::counter!("stateseal_replays_refused_total").increment(1);
                Err(RejectReason::Replayed)
            }
            Ok(Recorded::BeforeEpoch) => {
                metrics::counter!("stateseal_replay_store_errors_total", "kind" => "before_epoch")
                    .increment(1);
                Err(RejectReason::BeforeReplayEpoch)
            }
            Err(e) => {
                metrics::counter!("stateseal_replay_store_errors_total", "kind" => "error")
                    .increment(1);
                tracing::warn!(store = %store.uri(), error = %e, "could not record a single-use state; refusing it");
                Err(RejectReason::ReplayStoreUnavailable)
            }
        }
    }
}
