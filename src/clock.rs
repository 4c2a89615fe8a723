//! Time as the envelope sees it: seconds since the Unix epoch as `f64`,
//! which is what the Python SDK stamps into `iat`/`exp`.

use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of the current time. Inject a [`ManualClock`] in tests so no test
/// ever sleeps for time to pass.
pub trait Clock: Send + Sync + Debug {
    /// Seconds since the Unix epoch, with a fraction.
    fn now(&self) -> f64;
}

/// The system's wall clock.
///
/// ```
/// use stateseal::{Clock, SystemClock};
/// assert!(SystemClock.now() > 1.7e9);
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> f64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            // A clock before 1970 is broken; 0 makes every state expire (fail closed).
            .unwrap_or(0.0)
    }
}

/// A clock that only moves when told to.
///
/// ```
/// use stateseal::{Clock, ManualClock};
/// let clock = ManualClock::new(1_782_345_600.0);
/// clock.advance(0.5);
/// assert_eq!(clock.now(), 1_782_345_600.5);
/// ```
#[derive(Debug, Default)]
pub struct ManualClock(AtomicU64);

impl ManualClock {
    /// A clock showing `now`.
    pub fn new(now: f64) -> Self {
        Self(AtomicU64::new(now.to_bits()))
    }

    /// Sets the time.
    pub fn set(&self, now: f64) {
        self.0.store(now.to_bits(), Ordering::SeqCst);
    }

    /// Moves the time forward by `secs` (backward when negative).
    pub fn advance(&self, secs: f64) {
        self.set(self.now() + secs);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::SeqCst))
    }
}
