//! What the run records: the generation every running instance holds, the
//! rotations that land, and when the fleet has adopted each.

use super::{Fleet, T0};
use crate::report::RotationRecord;
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
    pub(super) fn observe(&mut self, t: f64) {
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
        let previous = self.observed.as_ref().map(|(_, d)| d.clone());
        for e in &doc.keys {
            if self.known_entries.insert(e.entry.clone()) {
                let generates = self.kms.generates();
                // The primary it replaces: the latest activation at t, still unsealing.
                let replaced = previous.as_ref().and_then(|p| {
                    p.keys
                        .iter()
                        .filter(|k| k.activate_at <= T0 + t)
                        .filter(|k| k.retire_at.is_none_or(|r| T0 + t < r))
                        .map(|k| k.activate_at)
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
}
