//! The run's figures, read off the models and the fleet at the end.

use super::{Fleet, T0};
use crate::report::Report;
use crate::scenario::Topology;

impl Fleet {
    /// The longest a due rotation waited for its write, a rotation still
    /// pending at the end included (a frozen rotation shows here).
    fn rotation_wait(&self) -> f64 {
        let span = self.scenario.span();
        let landed = self
            .rotations
            .iter()
            .filter_map(|r| r.due_at.map(|due| r.written_at - due))
            .fold(0.0, f64::max);
        // The primary at the end: due since its activation plus the period.
        let pending = self.observed.as_ref().and_then(|(_, doc)| {
            // A rotation in flight (a key not active yet) is not pending.
            if doc.keys.iter().any(|k| k.activate_at > T0 + span) {
                return None;
            }
            doc.keys
                .iter()
                .filter(|k| k.activate_at <= T0 + span)
                .map(|k| k.activate_at)
                .reduce(f64::max)
                .map(|a| span - (a - T0 + self.scenario.rotation_period))
        });
        landed.max(pending.unwrap_or(0.0))
    }

    pub(super) fn report(&self) -> Report {
        let store = self.store.counts();
        let kms = self.kms.counts();
        let span = self.scenario.span();
        let total_reads = store.full_reads.total() + store.unchanged_reads.total();
        let reads_peak = store.full_reads.peak_with(&store.unchanged_reads);
        let pending = self.waves.iter().any(|w| w.pending > 0);
        Report {
            instances: self.scenario.instances,
            span,
            topology: match self.scenario.topology {
                Topology::Rotator => "rotator",
                Topology::Servers => "servers",
            },
            clock_skew: self.scenario.clock_skew,
            rotations: self.rotations.clone(),
            rotation_wait_max: self.rotation_wait(),
            rounds: self.rounds,
            rejected_rounds: self.rejected,
            refused_to_start: self.refused,
            reads_peak,
            reads_mean: total_reads as f64 / span,
            full_reads: store.full_reads.total(),
            unchanged_reads: store.unchanged_reads.total(),
            reads_throttled: store.throttled_reads,
            newest_copy: (store.copy_reads, store.copy_writes),
            writes_peak: store.writes.peak(),
            writes_mean: store.writes.mean(span),
            writes: store.writes.total(),
            writes_throttled: store.throttled_writes,
            writes_conflicted: store.refused_writes,
            kms_calls: kms.calls.total(),
            kms_peak_per_s: kms.calls.peak(),
            kms_quota_per_s: self.kms.profile().quota_per_s,
            kms_throttled: kms.throttled,
            kms_denied: kms.denied,
            cold_start_s: if pending {
                f64::INFINITY
            } else {
                self.waves.iter().map(|w| w.done - w.at).fold(0.0, f64::max)
            },
            cold_start_late: self.waves.iter().map(|w| w.late + w.pending).sum(),
            ready_timeout: self.scenario.ready_timeout,
            startup_exits: self.exits,
            instances_past_ready_timeout: self.exited.len(),
            rotator_runs: (self.rotator.runs, self.rotator.failures),
            partitioned_sealed: self.partitioned,
            sealed_with_retired: self.sealed_retired,
            refreshes: (self.driven, self.idle),
        }
    }
}
