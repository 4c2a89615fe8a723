//! What the run records: the generation every running instance holds, the
//! rotations that land, when the fleet has adopted each, and the figures
//! read off the models and the fleet at the end.

use super::{Fleet, T0};
use crate::report::{Report, RotationRecord};
use crate::scenario::Topology;
use crate::virtual_time::{OPERATOR, run_now};

impl Fleet {
    /// Instance `i` now holds `generation` (or nothing).
    pub(super) fn hold(&mut self, i: usize, generation: Option<u64>) {
        let m = &mut self.members[i];
        let before = if m.started { m.generation } else { None };
        m.generation = generation;
        let after = if m.started { generation } else { None };
        if before == after {
            return;
        }
        if let Some(g) = before
            && let Some(n) = self.holders.get_mut(&g)
        {
            *n -= 1;
            if *n == 0 {
                self.holders.remove(&g);
            }
        }
        if let Some(g) = after {
            *self.holders.entry(g).or_insert(0) += 1;
        }
    }

    /// A rotation is adopted once no running instance holds an older generation.
    pub(super) fn check_adoption(&mut self, t: f64) {
        let oldest = self.holders.keys().next().copied();
        for (r, at_write) in self.rotations.iter_mut().zip(&self.restarts_at_write) {
            if r.adopted_after.is_none() && oldest.is_some_and(|g| g >= r.generation) {
                r.adopted_after = Some((t - r.written_at).max(0.0));
                r.kms_calls += self.kms.unwraps_of(&self.keyset_id, &r.entry);
                r.restarts_while_adopting = self.restarts - at_write;
            }
        }
    }

    /// Reads the document in place (uncounted) and records new rotations.
    pub(super) fn observe(&mut self) {
        let Some(stored) = self.store.document() else {
            return;
        };
        let (registry, trust) = &self.observer;
        let Ok(v) = run_now(
            &self.clock,
            OPERATOR,
            Box::pin(trust.open_ignoring_expiry(registry, "sim://keyset", &stored)),
        ) else {
            return;
        };
        let doc = v.doc;
        // When the write landed, not when this run first noticed it: noticing
        // depends on which refreshes run the scheduler (see `Scenario::exact`).
        // Every document in place was written through the model.
        let t = self.store.written_at();
        let previous = self.observed.as_ref().map(|(_, d)| d.clone());
        for e in &doc.keys {
            if self.known_entries.insert(e.entry.clone()) {
                let generates = self.kms.generates();
                // The primary it replaces: the latest activation at t, still unsealing.
                let replaced = previous.as_ref().and_then(|p| {
                    p.keys
                        .iter()
                        .filter(|k| k.activate_at.as_secs_f64() <= T0 + t)
                        .filter(|k| k.retire_at.is_none_or(|r| T0 + t < r.as_secs_f64()))
                        .map(|k| k.activate_at.as_secs_f64())
                        .reduce(f64::max)
                });
                self.rotations.push(RotationRecord {
                    entry: e.entry.clone(),
                    generation: doc.generation,
                    written_at: t,
                    emergency: false,
                    due_at: replaced.map(|a| a + self.scenario.rotation_period - T0),
                    adopted_after: None,
                    kms_calls: generates - self.generates_at,
                    restarts_while_adopting: 0,
                });
                self.restarts_at_write.push(self.restarts);
                self.generates_at = generates;
            }
        }
        self.observed = Some((self.store.version(), doc));
    }
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
            if doc
                .keys
                .iter()
                .any(|k| k.activate_at.as_secs_f64() > T0 + span)
            {
                return None;
            }
            doc.keys
                .iter()
                .filter(|k| k.activate_at.as_secs_f64() <= T0 + span)
                .map(|k| k.activate_at.as_secs_f64())
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
