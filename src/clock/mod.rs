//! Time as the envelope sees it: [`UnixTime`] instants from a [`Clock`].

mod unix_time;

use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
use std::time::{SystemTime, UNIX_EPOCH};

pub use unix_time::UnixTime;

/// A source of the current time. Inject a [`ManualClock`] in tests so no test
/// ever sleeps for time to pass.
pub trait Clock: Send + Sync + Debug {
    /// The current instant.
    fn now(&self) -> UnixTime;
}

/// The system's wall clock, read at the kernel tick's resolution, in whole milliseconds.
///
/// On Linux this is `CLOCK_REALTIME_COARSE`: the wall time as of the last
/// timer tick (1-4 ms behind, by `CONFIG_HZ`), read from the vDSO without
/// touching the hardware clock, which costs about 30 ns a read on a VM, twice
/// per boundary round. Elsewhere it is [`std::time::SystemTime::now`]. Either way the
/// time is cut to whole milliseconds: below the tick there is no information,
/// and a time in milliseconds is written and read back as a short decimal
/// (`1782345600.123`) instead of through the general float algorithms.
/// Token times are compared at the scale of the state TTL (minutes) and the
/// fleet's clock skew S (seconds), a thousand times coarser.
///
/// ```
/// use stateseal::{Clock, SystemClock};
/// let now = SystemClock.now().as_secs_f64();
/// assert!(now > 1.7e9);
/// assert_eq!((now * 1000.0).round() / 1000.0, now);
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> UnixTime {
        wall_seconds()
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn wall_seconds() -> UnixTime {
    use rustix::time::{ClockId, clock_gettime};
    let t = clock_gettime(ClockId::RealtimeCoarse);
    seconds(u64::try_from(t.tv_sec).ok(), t.tv_nsec)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn wall_seconds() -> UnixTime {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).ok();
    seconds(
        since.map(|d| d.as_secs()),
        i64::from(since.map_or(0, |d| d.subsec_nanos())),
    )
}

/// Seconds since the epoch in whole milliseconds, as the double nearest to
/// `ms / 1000`; a clock before 1970 is broken, and 0 makes every state expire
/// (fail closed).
fn seconds(secs: Option<u64>, nanos: i64) -> UnixTime {
    let Some(secs) = secs else {
        return UnixTime::EPOCH;
    };
    let millis = u64::try_from(nanos / 1_000_000).unwrap_or(0);
    secs.checked_mul(1000)
        .and_then(|ms| ms.checked_add(millis))
        .map_or(UnixTime::from_secs(secs), UnixTime::from_millis)
}

/// A clock that only moves when told to.
///
/// ```
/// use std::time::Duration;
/// use stateseal::{Clock, ManualClock, UnixTime};
/// let clock = ManualClock::new(UnixTime::from_secs(1_782_345_600));
/// clock.advance(Duration::from_millis(500));
/// assert_eq!(clock.now().as_secs_f64(), 1_782_345_600.5);
/// clock.rewind(Duration::from_secs(1));
/// assert_eq!(clock.now().as_secs_f64(), 1_782_345_599.5);
/// ```
#[derive(Debug, Default)]
pub struct ManualClock(AtomicU64);

impl ManualClock {
    /// A clock showing `now`.
    pub fn new(now: UnixTime) -> Self {
        Self(AtomicU64::new(now.as_secs_f64().to_bits()))
    }

    /// Sets the time.
    pub fn set(&self, now: UnixTime) {
        self.0.store(now.as_secs_f64().to_bits(), Ordering::SeqCst);
    }

    /// Moves the time forward by `by`.
    pub fn advance(&self, by: Duration) {
        self.set(self.now() + by);
    }

    /// Moves the time back by `by` (a clock stepped back by NTP).
    pub fn rewind(&self, by: Duration) {
        self.set(self.now() - by);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> UnixTime {
        // Only finite instants are ever stored (`Default` stores 0).
        UnixTime::from_secs_f64(f64::from_bits(self.0.load(Ordering::SeqCst)))
            .unwrap_or(UnixTime::EPOCH)
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
            let coarse = SystemClock.now().as_secs_f64();
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
    fn seconds_are_whole_milliseconds() {
        let secs = |s, n| seconds(s, n).as_secs_f64();
        assert_eq!(secs(Some(1_782_345_600), 500_000_000), 1_782_345_600.5);
        assert_eq!(secs(Some(1_782_345_600), 123_999_999), 1_782_345_600.123);
        assert_eq!(secs(Some(1_782_345_600), 0), 1_782_345_600.0);
        assert_eq!(
            secs(None, 999),
            0.0,
            "a clock before 1970 expires everything"
        );
        // The nearest double to ms / 1000: what a time written as `1782345600.123` reads back as.
        for ms in 1_782_345_600_000u64..1_782_345_602_000 {
            let f = secs(
                Some(ms / 1000),
                i64::try_from(ms % 1000).unwrap() * 1_000_000,
            );
            let text = format!("{}.{:03}", ms / 1000, ms % 1000);
            assert_eq!(f, text.parse::<f64>().unwrap(), "{text}");
        }
    }
}
