//! deploy/'s rotator: a Kubernetes CronJob running `stateseal rotate
//! --if-due` every hour (`concurrencyPolicy: Forbid`, `backoffLimit: 2`).
//! Each run is a new process: it reads and verifies the document (its MAC
//! key unwrapped afresh), rotates when the primary is due, else renews the
//! document when that is due. Its requests take their time like the servers'.

use stateseal::Error;
use stateseal::rotation::{KeysetTrust, rotate_if_due};

use super::{Event, Fleet, T0};
use crate::virtual_time::{ROTATOR, Step, poll};

/// Kubernetes' wait before a failed job's next pod: 10 s, doubling.
const JOB_BACKOFF: f64 = 10.0;
/// The CronJob's `backoffLimit`: retries of a failed run.
const BACKOFF_LIMIT: u32 = 2;

impl Fleet {
    /// A run of the job starts (`attempt` 0: the scheduled one).
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
            rotate_if_due(store.as_ref(), &registry, &trust, period, now)
                .await
                .map(|_| ())
        }));
        self.rotator_resume(t)
    }

    /// Polls the job's run.
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
                    self.observe(t);
                }
            }
        }
        Ok(())
    }
}
