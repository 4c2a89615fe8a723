//! The virtual clock, and the one way simulated work takes time: a task
//! awaits a [`Sleep`] on it. The fleet polls each instance's task (its
//! scheduler's refresh, the rotator job's run) by hand; a task that waits
//! leaves its wake-up time here, and the event loop polls it again then. So
//! a store read, the KMS calls after it and the compare-and-swap that ends
//! it happen at different instants, and other instances act in between.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

/// Who is running: an instance's index, or one of these.
pub(crate) type Actor = usize;
/// The `stateseal rotate --if-due` job.
pub(crate) const ROTATOR: Actor = usize::MAX - 1;
/// The operator's own commands (setup, the emergency rotation).
pub(crate) const OPERATOR: Actor = usize::MAX;

/// The virtual time every model reads (seconds from the start of the run).
#[derive(Debug, Default)]
pub(crate) struct SimTime {
    now: AtomicU64,
    /// The earliest time the task being polled asked to be polled again.
    wake: Mutex<Option<f64>>,
    actor: AtomicUsize,
    /// Sleeps end at once: the operator's commands, and replays.
    instant: AtomicBool,
}

pub(crate) type Clock = Arc<SimTime>;

impl SimTime {
    pub(crate) fn now(&self) -> f64 {
        f64::from_bits(self.now.load(Ordering::Relaxed))
    }

    pub(crate) fn set(&self, t: f64) {
        self.now.store(t.to_bits(), Ordering::Relaxed);
    }

    /// The actor whose task is being polled (the KMS model's failing rotators are actors).
    pub(crate) fn actor(&self) -> Actor {
        self.actor.load(Ordering::Relaxed)
    }

    fn wake_at(&self, t: f64) {
        let mut w = self
            .wake
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *w = Some(w.map_or(t, |e| e.min(t)));
    }

    fn take_wake(&self) -> Option<f64> {
        self.wake
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    /// Waits `secs` of virtual time.
    pub(crate) fn sleep(self: &Arc<Self>, secs: f64) -> Sleep {
        Sleep {
            clock: Arc::clone(self),
            secs,
            until: None,
        }
    }
}

/// A wait on the virtual clock.
#[derive(Debug)]
pub(crate) struct Sleep {
    clock: Clock,
    secs: f64,
    until: Option<f64>,
}

impl Future for Sleep {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.clock.instant.load(Ordering::Relaxed) {
            return Poll::Ready(());
        }
        let now = self.clock.now();
        let secs = self.secs;
        let until = *self.until.get_or_insert(now + secs.max(0.0));
        if now >= until {
            Poll::Ready(())
        } else {
            self.clock.wake_at(until);
            Poll::Pending
        }
    }
}

/// A simulated process's work in flight.
pub(crate) type Task = Pin<Box<dyn Future<Output = Result<(), stateseal::Error>>>>;

/// Where a polled task stands.
pub(crate) enum Step {
    Done(Result<(), stateseal::Error>),
    /// Poll it again at this time.
    Wait(f64),
}

/// Polls `task` as `actor`.
///
/// # Errors
/// A task that waits on anything but the virtual clock would never be woken:
/// that is a bug of the simulation, reported rather than hung on.
pub(crate) fn poll(
    clock: &SimTime,
    actor: Actor,
    task: &mut Task,
) -> Result<Step, stateseal::Error> {
    clock.actor.store(actor, Ordering::Relaxed);
    clock.take_wake();
    let mut cx = Context::from_waker(Waker::noop());
    match task.as_mut().poll(&mut cx) {
        Poll::Ready(r) => Ok(Step::Done(r)),
        Poll::Pending => clock.take_wake().map(Step::Wait).ok_or_else(|| {
            stateseal::Error::Config(
                "a simulated task waited on something other than the virtual clock".into(),
            )
        }),
    }
}

/// Runs `work` to its end at once (its sleeps end at once), as `actor`:
/// the operator's commands, replays and the report's own reads.
///
/// # Errors
/// The work's own error, or work that waits on anything but the clock.
pub(crate) fn run_now<'a, T>(
    clock: &SimTime,
    actor: Actor,
    mut work: Pin<Box<dyn Future<Output = Result<T, stateseal::Error>> + 'a>>,
) -> Result<T, stateseal::Error> {
    let was = clock.instant.swap(true, Ordering::Relaxed);
    let previous = clock.actor.swap(actor, Ordering::Relaxed);
    let mut cx = Context::from_waker(Waker::noop());
    let result = match work.as_mut().poll(&mut cx) {
        Poll::Ready(r) => r,
        Poll::Pending => Err(stateseal::Error::Config(
            "simulated work waited on something other than the virtual clock".into(),
        )),
    };
    clock.instant.store(was, Ordering::Relaxed);
    clock.actor.store(previous, Ordering::Relaxed);
    result
}

/// The library's instant for a model time in seconds since 1970 (model times
/// are finite: they start at the scenario's T0 and advance by finite steps).
pub(crate) fn instant(t: f64) -> stateseal::UnixTime {
    stateseal::UnixTime::from_secs_f64(t).expect("model times are finite")
}
