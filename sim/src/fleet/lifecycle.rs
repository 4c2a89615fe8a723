//! Server processes come and go: a cold start of the whole fleet, rolling
//! restarts, and start-ups that fail. A server that has no key ring
//! `ready_timeout` after it started exits, as the real one does, and
//! Kubernetes starts it again after CrashLoopBackOff's wait (10 s, doubling
//! per exit in a row, at most 300 s).
//!
//! deploy/'s rotator: a Kubernetes CronJob running `stateseal rotate
//! --if-due` every hour (`concurrencyPolicy: Forbid`, `backoffLimit: 2`).
//! Each run is a new process: it reads and verifies the document (its MAC
//! key unwrapped afresh), rotates when the primary is due, else renews the
//! document when that is due. Its requests take their time like the servers'.

use crate::virtual_time::instant;
use stateseal::Error;
use stateseal::rotation::{KeysetTrust, rotate_if_due};
use std::time::Duration;

use super::{Event, Fleet, Scheduled, T0, Wave};
use crate::virtual_time::{ROTATOR, Step, poll};

/// The rolling restarts: when each wave starts, and the first of the
/// sequence numbers (the queue's order among equal times) set aside for them.
/// Each instance's next restart is queued when its last one happens: the
/// whole run's restarts queued up front made the queue some 30 times larger,
/// and taking events out of it half of a 10,000-instance week's time. Each
/// keeps the time and sequence number it had then, so runs are unchanged.
#[derive(Default)]
pub(super) struct RestartPlan {
    waves: Vec<f64>,
    first_seq: u64,
}

/// Kubernetes' wait before a failed job's next pod: 10 s, doubling.
const JOB_BACKOFF: f64 = 10.0;
/// The CronJob's `backoffLimit`: retries of a failed run.
const BACKOFF_LIMIT: u32 = 2;

impl Fleet {
    /// The whole fleet starts at `t`, each instance within `start_spread`.
    pub(super) fn cold_start(&mut self, t: f64) -> Result<(), Error> {
        let wave = self.waves.len();
        self.waves.push(Wave {
            at: t,
            pending: self.members.len(),
            done: t,
            late: 0,
        });
        for i in 0..self.members.len() {
            let at = t + self.rng.unit() * self.scenario.start_spread;
            if t > 0.0 {
                self.restarts += 1;
                // A process of the old fleet stops now; its successor starts within the spread.
                self.replace(i, 0, at)?;
            } else {
                let epoch = self.members[i].epoch;
                self.push(at, Event::Start(i, epoch));
            }
            self.members[i].wave_start = None;
            if let Some(old) = self.members[i].wave.replace(wave) {
                self.waves[old].pending -= 1;
            }
        }
        Ok(())
    }

    /// Instance `i`'s process starts: its start-up loop's first refresh.
    pub(super) fn start(&mut self, i: usize, t: f64) -> Result<(), Error> {
        let m = &mut self.members[i];
        m.started_at = t;
        if m.wave.is_some() && m.wave_start.is_none() {
            m.wave_start = Some(t);
        }
        self.refresh(i, t)
    }

    /// Instance `i` became ready at `t`.
    pub(super) fn became_ready(&mut self, i: usize, t: f64) {
        let m = &mut self.members[i];
        m.started = true;
        m.crashes = 0;
        if let Some(w) = m.wave.take() {
            let wave = &mut self.waves[w];
            wave.pending -= 1;
            wave.done = wave.done.max(t);
            // Ready later than ready_timeout after it first started (exits included).
            let first = m.wave_start.take().unwrap_or(t);
            wave.late += usize::from(t - first > self.scenario.ready_timeout);
        }
    }

    /// The process of instance `i` exits at `t` (ready_timeout passed).
    pub(super) fn exit(&mut self, i: usize, t: f64) -> Result<(), Error> {
        self.exits += 1;
        self.exited.insert(i);
        let crashes = self.members[i].crashes + 1;
        let (first, cap) = self.scenario.crash_backoff;
        let wait = (first * 2f64.powi(crashes.min(30) as i32 - 1)).min(cap);
        self.replace(i, crashes, t + wait)
    }

    /// A restart every `every` seconds until `span`, each instance
    /// `restart_window / instances` after the one before.
    pub(super) fn plan_restarts(&mut self, every: f64, span: f64) {
        let mut at = every;
        while at < span {
            self.restart_plan.waves.push(at);
            at += every;
        }
        self.restart_plan.first_seq = self.seq + 1;
        self.seq += (self.restart_plan.waves.len() * self.scenario.instances) as u64;
        for i in 0..self.scenario.instances {
            self.queue_restart(i, 0);
        }
    }

    /// Queues instance `i`'s restart in `wave`, if the run has that wave.
    pub(super) fn queue_restart(&mut self, i: usize, wave: u32) {
        let Some(at) = self.restart_plan.waves.get(wave as usize) else {
            return;
        };
        let n = self.scenario.instances;
        let offset = self.scenario.restart_window * i as f64 / n as f64;
        self.queue.push(Scheduled {
            at: at + offset,
            seq: self.restart_plan.first_seq + u64::from(wave) * n as u64 + i as u64,
            event: Event::Restart(i, wave),
        });
    }

    /// A rolling restart reaches instance `i`.
    pub(super) fn restart(&mut self, i: usize, t: f64) -> Result<(), Error> {
        self.restarts += 1;
        self.replace(i, 0, t + self.scenario.restart_downtime)
    }

    /// Instance `i`'s process stops now; a new one (cold cache) starts at `at`.
    fn replace(&mut self, i: usize, crashes: u32, at: f64) -> Result<(), Error> {
        self.hold(i, None);
        // The last holder of an old generation may be the one leaving.
        self.check_adoption(self.clock.now());
        let epoch = self.members[i].epoch + 1;
        let mut m = self.member(i, epoch)?;
        m.crashes = crashes;
        m.wave = self.members[i].wave.take();
        m.wave_start = self.members[i].wave_start.take();
        self.members[i] = m;
        self.push(at, Event::Start(i, epoch));
        Ok(())
    }

    /// A run of the rotator job starts (`attempt` 0: the scheduled one).
    pub(super) fn rotator_start(&mut self, attempt: u32, t: f64) -> Result<(), Error> {
        if attempt == 0 {
            self.push(t + self.scenario.rotator_every, Event::Rotator(0));
        }
        // Forbid: a run still going skips the next.
        if self.rotator.task.is_some() {
            return Ok(());
        }
        self.rotator.runs += 1;
        self.rotator.attempt = attempt;
        let store = self.store.handle(None);
        let registry = self.registry.clone();
        let trust = KeysetTrust::new(self.trust.clone());
        let period = self.scenario.rotation_period;
        let now = T0 + t + self.rotator.offset;
        self.rotator.task = Some(Box::pin(async move {
            rotate_if_due(
                store.as_ref(),
                &registry,
                &trust,
                Duration::from_secs_f64(period),
                instant(now),
            )
            .await
            .map(|_| ())
        }));
        self.rotator_resume(t)
    }

    /// Polls the rotator job's run.
    pub(super) fn rotator_resume(&mut self, t: f64) -> Result<(), Error> {
        let Some(mut task) = self.rotator.task.take() else {
            return Ok(());
        };
        match poll(&self.clock, ROTATOR, &mut task)? {
            Step::Wait(at) => {
                self.rotator.task = Some(task);
                self.push(at, Event::RotatorResume);
            }
            Step::Done(result) => {
                if result.is_err() {
                    self.rotator.failures += 1;
                    let attempt = self.rotator.attempt;
                    if attempt < BACKOFF_LIMIT {
                        let wait = JOB_BACKOFF * 2f64.powi(attempt as i32);
                        self.push(t + wait, Event::Rotator(attempt + 1));
                    }
                }
                if self.store.version() != self.observed.as_ref().map_or(0, |o| o.0) {
                    self.observe();
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Event, Fleet};
    use crate::scenario::{KmsKind, Scenario, StoreKind};

    /// Twelve instances restarted every 60 s for three minutes: two waves,
    /// one restart per instance in the queue at a time, in the wave's order.
    #[test]
    fn one_restart_per_instance_is_queued_at_a_time() {
        let mut s = Scenario::capacity(12, StoreKind::S3, KmsKind::Aws);
        s.days = 180.0 / 86_400.0;
        s.restart_every = Some(60.0);
        s.restart_window = 40.0;
        let fleet = Fleet::new(&s).expect("fleet");
        assert_eq!(fleet.restart_plan.waves, [60.0, 120.0]);
        let mut queued: Vec<(f64, u64, usize, u32)> = fleet
            .queue
            .iter()
            .filter_map(|e| match e.event {
                Event::Restart(i, wave) => Some((e.at, e.seq, i, wave)),
                _ => None,
            })
            .collect();
        queued.sort_by_key(|a| a.1);
        assert_eq!(queued.len(), 12, "{queued:?}");
        for (k, &(at, seq, i, wave)) in queued.iter().enumerate() {
            assert_eq!((i, wave), (k, 0));
            assert_eq!(at, 60.0 + 40.0 * k as f64 / 12.0);
            assert_eq!(seq, fleet.restart_plan.first_seq + k as u64);
        }
        // The second wave's numbers are set aside: nothing else takes them.
        assert!(fleet.seq >= fleet.restart_plan.first_seq + 24 - 1);
    }
}
