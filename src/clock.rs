//! Time as the envelope sees it: seconds since the Unix epoch as `f64`,
//! which is what the Python SDK stamps into `iat`/`exp`.

use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(any(target_os = "linux", target_os = "android")))]
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of the current time. Inject a [`ManualClock`] in tests so no test
/// ever sleeps for time to pass.
pub trait Clock: Send + Sync + Debug {
    /// Seconds since the Unix epoch, with a fraction.
    fn now(&self) -> f64;
}

/// The system's wall clock, read at the kernel tick's resolution.
///
/// On Linux this is `CLOCK_REALTIME_COARSE`: the wall time as of the last
/// timer tick (1-4 ms behind, by `CONFIG_HZ`), read from the vDSO without
/// touching the hardware clock. Token times are compared at the scale of the
/// state TTL (minutes) and the fleet's clock skew S (seconds), a thousand
/// times coarser than a tick, and the precise clock costs about 30 ns a read on
/// a VM, twice per boundary round. Elsewhere it is [`SystemTime::now`].
///
/// ```
/// use stateseal::{Clock, SystemClock};
/// assert!(SystemClock.now() > 1.7e9);
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> f64 {
        wall_seconds()
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn wall_seconds() -> f64 {
    use rustix::time::{ClockId, clock_gettime};
    let t = clock_gettime(ClockId::RealtimeCoarse);
    seconds(u64::try_from(t.tv_sec).ok(), t.tv_nsec)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn wall_seconds() -> f64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).ok();
    seconds(
        since.map(|d| d.as_secs()),
        i64::from(since.map_or(0, |d| d.subsec_nanos())),
    )
}

/// Seconds since the epoch as `Duration::as_secs_f64` computes them; a clock
/// before 1970 is broken, and 0 makes every state expire (fail closed).
fn seconds(secs: Option<u64>, nanos: i64) -> f64 {
    match secs {
        Some(secs) => secs as f64 + nanos as f64 / 1e9,
        None => 0.0,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_clock_is_the_wall_clock_to_within_a_tick() {
        for _ in 0..1000 {
            let before = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs_f64();
            let coarse = SystemClock.now();
            let after = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs_f64();
            // Never ahead of the precise clock; behind it by a tick or so, never by a second.
            assert!(coarse <= after, "{coarse} > {after}");
            assert!(before - coarse < 1.0, "{coarse} lags {before}");
        }
    }

    #[test]
    fn seconds_as_duration_computes_them() {
        assert_eq!(seconds(Some(1_782_345_600), 500_000_000), 1_782_345_600.5);
        let d = std::time::Duration::new(1_782_345_600, 123_456_789);
        assert_eq!(seconds(Some(d.as_secs()), 123_456_789), d.as_secs_f64());
        assert_eq!(
            seconds(None, 999),
            0.0,
            "a clock before 1970 expires everything"
        );
    }
}
