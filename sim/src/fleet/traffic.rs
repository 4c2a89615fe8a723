//! Traffic: rounds sealed on a random ready instance (and, while a partition
//! lasts, probes on a cut-off one) and verified later on another, each on
//! its own clock.

use stateseal::{KeyId, MintOptions, OpenOptions};

use super::{Event, Fleet, T0, identity};
use crate::virtual_time::instant;

impl Fleet {
    /// Key ids the fleet's document lets seal or unseal at `t`.
    pub(super) fn live_kids(&self, t: f64) -> Vec<KeyId> {
        let Some((_, doc)) = &self.observed else {
            return Vec::new();
        };
        doc.keys
            .iter()
            .filter(|e| e.retire_at.is_none_or(|r| T0 + t < r.as_secs_f64()))
            .filter_map(|e| e.kid)
            .collect()
    }

    pub(super) fn round(&mut self, t: f64) {
        let gap = 1.0 / self.scenario.rounds_per_second;
        let next = t + gap * (0.5 + self.rng.unit());
        self.push(next, Event::Round);
        let a = self.rng.below(self.members.len());
        self.seal_on(a, t, false);
        // A cut-off instance is probed on every round while the partition lasts.
        let cut = self
            .scenario
            .partition
            .is_some_and(|(from, len)| (from..from + len).contains(&t));
        if cut {
            let p = self.rng.below(self.scenario.partition_size);
            self.seal_on(p, t, true);
        }
    }

    /// A new conversation on instance `a`. A load balancer routes only to
    /// ready instances, so a refusal there is a round refused its start; a
    /// probe of a cut-off instance may find it (rightly) not sealing.
    pub(super) fn seal_on(&mut self, a: usize, t: f64, probe: bool) {
        let m = &self.members[a];
        if !m.started || !(probe || m.sched.is_ready()) {
            return;
        }
        let live = self.live_kids(t);
        let primary = m.ring.current().map(|r| r.primary().kid());
        let minted = MintOptions::new().at(instant(self.local(a, t)));
        match m.env.mint(&identity(), b"state", minted) {
            Ok(token) => {
                let retired = primary.is_some_and(|k| !live.contains(&k));
                self.sealed_retired += u64::from(retired);
                if probe {
                    self.partitioned.0 += 1;
                    self.partitioned.1 += u64::from(retired);
                }
                let think = 1.0 + self.rng.unit() * self.scenario.timing.ttl.as_secs_f64() / 2.0;
                let slot = match self.free_tokens.pop() {
                    Some(s) => {
                        self.tokens[s as usize] = Some(token);
                        s
                    }
                    None => {
                        self.tokens.push(Some(token));
                        (self.tokens.len() - 1) as u32
                    }
                };
                self.push(t + think, Event::Verify(slot));
            }
            Err(_) if probe => {}
            Err(_) => self.refused += 1,
        }
    }

    pub(super) fn verify(&mut self, token: &str, t: f64) {
        let n = self.members.len();
        // A random ready instance (a load balancer routes only to ready ones).
        for _ in 0..16 {
            let b = self.rng.below(n);
            let m = &self.members[b];
            if !(m.started && m.sched.is_ready()) {
                continue;
            }
            self.rounds += 1;
            let local = self.local(b, t);
            if self.members[b]
                .env
                .open(&identity(), token, OpenOptions::new().at(instant(local)))
                .is_err()
            {
                self.rejected += 1;
            }
            return;
        }
    }
}
