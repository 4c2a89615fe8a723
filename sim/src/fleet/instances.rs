//! One instance's life: a new process with a cold cache, its refreshes (the
//! scheduler's, or idle ones counted without it), and its restarts.

use std::sync::Arc;

use stateseal::{AesGcmCodec, Envelope, Error, ManualClock, RingHandle, RotationScheduler};

use super::{Event, Fleet, Member, T0};

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
            Arc::new(ManualClock::new(T0)),
        )?;
        let t = self.scenario.timing;
        let env = Envelope::builder(Arc::new(AesGcmCodec::new(ring.clone())), Some("svc"))
            .ttl(t.ttl)
            .max_skew(t.max_skew)
            .build()?;
        Ok(Member {
            sched,
            env,
            ring,
            epoch,
            started: false,
            failures: 0,
            seen_version: None,
            next_event: f64::NEG_INFINITY,
            last_idle: None,
            generation: None,
        })
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
        let _ = self.rt.block_on(self.members[i].sched.refresh_at(T0 + t));
        self.clock.set(now);
        self.store.set_replaying(false);
    }

    pub(super) fn refresh(&mut self, i: usize, t: f64) {
        let m = &self.members[i];
        let idle = !self.scenario.exact
            && m.started
            && m.failures == 0
            && m.seen_version == Some(self.store.version())
            && self.store.reachable(i)
            && T0 + t < m.next_event;
        if idle {
            self.store.count_unchanged_read(t);
            self.idle += 1;
            self.members[i].last_idle = Some(t);
            let wait = self.pacing.after_success(self.rng.unit());
            let epoch = self.members[i].epoch;
            self.push(
                t + self.scenario.store.latency + wait,
                Event::Refresh(i, epoch),
            );
            return;
        }
        self.driven += 1;
        let (kms_before, store_before) = (self.kms.total(), self.store_ops());
        let result = self.rt.block_on(self.members[i].sched.refresh_at(T0 + t));
        let latency = (self.kms.total() - kms_before) as f64 * self.scenario.kms.latency
            + (self.store_ops() - store_before) as f64 * self.scenario.store.latency;
        let done = t + latency;
        let version = self.store.version();
        let status = self.members[i].sched.status();
        let m = &mut self.members[i];
        m.last_idle = None;
        let wait = match result {
            Ok(_) => {
                m.failures = 0;
                m.seen_version = Some(version);
                m.next_event = m.sched.next_event_at();
                let first = !m.started;
                m.started = true;
                if first && m.epoch == 0 {
                    self.first_wave_ready += 1;
                    self.cold_start = self.cold_start.max(done);
                }
                if first {
                    self.pacing.first(self.rng.unit())
                } else {
                    self.pacing.after_success(self.rng.unit())
                }
            }
            Err(_) => {
                m.failures = m.failures.saturating_add(1);
                m.seen_version = None;
                let n = m.failures;
                self.pacing.after_failure(n, self.rng.unit())
            }
        };
        self.hold(i, status.generation);
        let epoch = self.members[i].epoch;
        self.push(done + wait, Event::Refresh(i, epoch));
        if self.store.version() != self.observed.as_ref().map_or(0, |o| o.0) {
            self.observe(t);
        }
        self.check_adoption(done);
    }

    pub(super) fn store_ops(&self) -> u64 {
        self.store.requests()
    }

    pub(super) fn restart(&mut self, i: usize, t: f64) -> Result<(), Error> {
        self.restarts += 1;
        self.hold(i, None);
        let epoch = self.members[i].epoch + 1;
        let mut m = self.member(i, epoch)?;
        m.started = false;
        self.members[i] = m;
        self.push(t + 1.0, Event::Refresh(i, epoch));
        Ok(())
    }
}
