//! One instance's refreshes: the scheduler's own (a task whose store and KMS
//! requests each take their time), or idle ones counted without it, and the
//! replay that lets an instance about to lose the store start its staleness
//! clock where a real one would.

use crate::virtual_time::instant;
use std::sync::Arc;

use stateseal::rotation::NextEvent;
use stateseal::{Envelope, Error, ManualClock, RingHandle, RotationScheduler};

use super::{Event, Fleet, T0};
use crate::virtual_time::{Step, Task, poll, run_now};

/// One server process.
pub(crate) struct Member {
    pub(super) sched: RotationScheduler,
    pub(super) env: Envelope,
    pub(super) ring: Arc<RingHandle>,
    pub(super) epoch: u32,
    /// Ready (a ring loaded) since this process started.
    pub(super) started: bool,
    pub(super) started_at: f64,
    pub(super) failures: u32,
    /// Exits at ready_timeout in a row (CrashLoopBackOff's count).
    pub(super) crashes: u32,
    /// The refresh in flight, when the scheduler is driven.
    pub(super) task: Option<Task>,
    /// The refresh in flight's one random draw (its pacing).
    pub(super) unit: f64,
    /// Store version of the last successful scheduler refresh.
    pub(super) seen_version: Option<u64>,
    /// When a refresh that finds the store unchanged could next matter.
    pub(super) next_event: NextEvent,
    /// The last idle refresh counted without the scheduler, if after the last driven one.
    pub(super) last_idle: Option<f64>,
    pub(super) generation: Option<u64>,
    /// The cold start this instance has not become ready for yet, and when
    /// its first process of that cold start started.
    pub(super) wave: Option<usize>,
    pub(super) wave_start: Option<f64>,
}

impl Fleet {
    pub(super) fn member(&self, i: usize, epoch: u32) -> Result<Member, Error> {
        let ring = Arc::new(RingHandle::empty());
        let config = self
            .config
            .to_builder()
            .instance_id(format!("pod-{i}-{epoch}"))
            .build()?;
        let sched = RotationScheduler::new(
            config,
            self.store.handle(Some(i)),
            self.registry.clone(),
            ring.clone(),
            Arc::new(ManualClock::new(instant(T0))),
        )?;
        Ok(Member {
            env: self.envelope(ring.clone())?,
            sched,
            ring,
            epoch,
            started: false,
            started_at: 0.0,
            failures: 0,
            crashes: 0,
            task: None,
            unit: 0.0,
            seen_version: None,
            next_event: NextEvent::EveryRefresh,
            last_idle: None,
            generation: None,
            wave: None,
            wave_start: None,
        })
    }

    /// Instance `i`'s clock reading at simulated time `t` (Unix seconds).
    pub(super) fn local(&self, i: usize, t: f64) -> f64 {
        T0 + t + self.offsets[i]
    }

    /// Before instance `i` loses the store, the idle refreshes it made since
    /// the scheduler last ran are replayed (uncounted) so its staleness clock
    /// starts where a real instance's would.
    pub(super) fn catch_up(&mut self, i: usize) {
        let Some(t) = self.members[i].last_idle.take() else {
            return;
        };
        self.store.set_replaying(true);
        let now = self.clock.now();
        self.clock.set(t);
        let (sched, at) = (self.members[i].sched.clone(), self.local(i, t));
        let _ = run_now(
            &self.clock,
            i,
            Box::pin(async move { sched.refresh_at(instant(at)).await }),
        );
        self.clock.set(now);
        self.store.set_replaying(false);
    }

    /// A refresh is due: idle (one conditional read counted, the scheduler
    /// not called) or driven.
    pub(super) fn refresh(&mut self, i: usize, t: f64) -> Result<(), Error> {
        let unit = self.rng.unit();
        let local = self.local(i, t);
        let m = &mut self.members[i];
        m.unit = unit;
        // The read would reach an unchanged store that does not throttle it.
        let idle = !self.scenario.exact
            && m.started
            && m.failures == 0
            && !m.next_event.is_due(instant(local))
            && self.store.idle_read(i, m.seen_version, t);
        if idle {
            self.idle += 1;
            m.last_idle = Some(t);
            let wait = self.pacing.after_success(unit).as_secs_f64();
            let epoch = m.epoch;
            self.push(
                t + self.scenario.store.latency + wait,
                Event::Refresh(i, epoch),
            );
            return Ok(());
        }
        self.drive(i, t)
    }

    /// Starts the scheduler's refresh at `t` and polls it now.
    fn drive(&mut self, i: usize, t: f64) -> Result<(), Error> {
        self.driven += 1;
        let (sched, at) = (self.members[i].sched.clone(), self.local(i, t));
        let m = &mut self.members[i];
        m.last_idle = None;
        m.task = Some(Box::pin(async move {
            sched.refresh_at(instant(at)).await.map(|_| ())
        }));
        self.resume(i, t)
    }

    /// Polls instance `i`'s refresh: it waits again, or it is done.
    pub(super) fn resume(&mut self, i: usize, t: f64) -> Result<(), Error> {
        let Some(mut task) = self.members[i].task.take() else {
            return Ok(());
        };
        match poll(&self.clock, i, &mut task)? {
            Step::Wait(at) => {
                let epoch = self.members[i].epoch;
                self.members[i].task = Some(task);
                self.push(at, Event::Resume(i, epoch));
                Ok(())
            }
            Step::Done(result) => self.finished(i, t, result),
        }
    }

    /// A driven refresh ended at `done`.
    fn finished(&mut self, i: usize, done: f64, result: Result<(), Error>) -> Result<(), Error> {
        let served = self.store.served(i);
        let status = self.members[i].sched.status();
        let m = &mut self.members[i];
        let unit = m.unit;
        let first_ready = result.is_ok() && !m.started;
        let wait = match result {
            Ok(()) => {
                m.failures = 0;
                m.seen_version = served;
                m.next_event = m.sched.next_event_at();
                if first_ready {
                    self.pacing.first(unit).as_secs_f64()
                } else {
                    self.pacing.after_success(unit).as_secs_f64()
                }
            }
            Err(_) => {
                m.failures = m.failures.saturating_add(1);
                m.seen_version = None;
                let n = m.failures;
                if !m.started {
                    // The server's own start-up loop: exit at ready_timeout.
                    let deadline = m.started_at + self.scenario.ready_timeout;
                    if done >= deadline {
                        return self.exit(i, done);
                    }
                    self.pacing
                        .after_failure(n, unit)
                        .as_secs_f64()
                        .min(deadline - done)
                } else {
                    self.pacing.after_failure(n, unit).as_secs_f64()
                }
            }
        };
        if first_ready {
            self.became_ready(i, done);
        }
        self.hold(i, status.generation);
        let epoch = self.members[i].epoch;
        self.push(done + wait, Event::Refresh(i, epoch));
        if self.store.version() != self.observed.as_ref().map_or(0, |o| o.0) {
            self.observe();
        }
        self.check_adoption(done);
        Ok(())
    }
}
