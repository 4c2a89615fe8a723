//! [`UnixTime`]: an instant as the envelope and the keyset see it.

use std::fmt;
use std::ops::{Add, Sub};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// An instant: seconds since the Unix epoch, with a fraction (always finite).
///
/// Tokens carry `iat` and `exp` as JSON numbers of seconds, as the Python
/// SDK stamps them, so the instant keeps the seconds as a double: a time
/// read from a token is the time written. Lifetimes and intervals are
/// [`Duration`]s; adding one gives an instant.
///
/// ```
/// use std::time::Duration;
/// use stateseal::UnixTime;
///
/// let minted = UnixTime::from_secs(1_782_345_600);
/// let expires = minted + Duration::from_secs(600);
/// assert_eq!(expires.as_secs_f64(), 1_782_346_200.0);
/// assert_eq!(expires.duration_since(minted), Some(Duration::from_secs(600)));
/// assert_eq!(minted.duration_since(expires), None);
/// assert_eq!(UnixTime::from_secs_f64(f64::NAN), None);
/// ```
#[derive(Clone, Copy, PartialEq, Default)]
pub struct UnixTime(f64);

impl UnixTime {
    /// The Unix epoch, 1970-01-01T00:00:00Z.
    pub const EPOCH: Self = Self(0.0);

    /// `secs` whole seconds after the epoch.
    #[must_use]
    pub const fn from_secs(secs: u64) -> Self {
        Self(secs as f64)
    }

    /// `millis` milliseconds after the epoch.
    #[must_use]
    pub const fn from_millis(millis: u64) -> Self {
        // One division of an exact integer: the double nearest to the decimal `s.mmm`.
        Self(millis as f64 / 1000.0)
    }

    /// Seconds since the epoch, with a fraction; `None` unless finite
    /// (an instant before the epoch is negative).
    #[must_use]
    pub fn from_secs_f64(secs: f64) -> Option<Self> {
        // `+ 0.0` makes -0 into 0, so equality and order agree.
        secs.is_finite().then_some(Self(secs + 0.0))
    }

    /// The key plane's seconds (document times and sums of finite times,
    /// always finite) as an instant. A non-finite value, which no caller
    /// builds, becomes the epoch: an expiry in the past, which fails closed.
    #[cfg(feature = "keys")]
    pub(crate) fn from_finite_secs(secs: f64) -> Self {
        debug_assert!(secs.is_finite(), "{secs}");
        Self::from_secs_f64(secs).unwrap_or(Self::EPOCH)
    }

    /// Seconds since the epoch, as tokens and documents write them.
    #[must_use]
    pub const fn as_secs_f64(self) -> f64 {
        self.0
    }

    /// The time from `earlier` to this instant; `None` when `earlier` is later.
    #[must_use]
    pub fn duration_since(self, earlier: Self) -> Option<Duration> {
        Duration::try_from_secs_f64(self.0 - earlier.0).ok()
    }

    /// The time from `earlier` to this instant, zero when `earlier` is later.
    #[must_use]
    pub fn saturating_duration_since(self, earlier: Self) -> Duration {
        self.duration_since(earlier).unwrap_or(Duration::ZERO)
    }
}

impl From<SystemTime> for UnixTime {
    fn from(time: SystemTime) -> Self {
        match time.duration_since(UNIX_EPOCH) {
            Ok(after) => Self(after.as_secs_f64()),
            Err(before) => Self(-before.duration().as_secs_f64()),
        }
    }
}

impl Eq for UnixTime {}

impl PartialOrd for UnixTime {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for UnixTime {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // Finite and never -0: the total order is the numeric one.
        self.0.total_cmp(&other.0)
    }
}

impl Add<Duration> for UnixTime {
    type Output = Self;
    /// Always finite: the longest `Duration` is about 1.8e19 seconds.
    fn add(self, d: Duration) -> Self {
        Self(self.0 + d.as_secs_f64())
    }
}

impl Sub<Duration> for UnixTime {
    type Output = Self;
    fn sub(self, d: Duration) -> Self {
        Self(self.0 - d.as_secs_f64() + 0.0)
    }
}

impl fmt::Debug for UnixTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UnixTime({})", self.0)
    }
}

/// Seconds since the epoch, as a token writes them.
impl fmt::Display for UnixTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_and_arithmetic_are_the_seconds() {
        let t = UnixTime::from_millis(1_782_345_600_123);
        assert_eq!(t.as_secs_f64(), "1782345600.123".parse::<f64>().unwrap());
        assert!(t < t + Duration::from_millis(1));
        assert_eq!(t + Duration::ZERO, t);
        assert_eq!((t - Duration::from_secs(5)).duration_since(t), None);
        assert_eq!(
            UnixTime::from_secs(10).saturating_duration_since(UnixTime::from_secs(4)),
            Duration::from_secs(6)
        );
        assert_eq!(
            UnixTime::from_secs(4).saturating_duration_since(UnixTime::from_secs(10)),
            Duration::ZERO
        );
    }

    #[test]
    fn only_finite_seconds_are_instants_and_minus_zero_is_zero() {
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(UnixTime::from_secs_f64(bad), None);
        }
        let zero = UnixTime::from_secs_f64(-0.0).unwrap();
        assert_eq!(zero, UnixTime::EPOCH);
        assert_eq!(zero.cmp(&UnixTime::EPOCH), std::cmp::Ordering::Equal);
        assert_eq!(UnixTime::from_secs_f64(-1.5).unwrap().as_secs_f64(), -1.5);
        let before = UnixTime::from(UNIX_EPOCH - Duration::from_secs(3));
        assert_eq!(before.as_secs_f64(), -3.0);
        assert_eq!(
            UnixTime::from(UNIX_EPOCH + Duration::from_millis(1500)).as_secs_f64(),
            1.5
        );
        assert!(UnixTime::from_secs(1) + Duration::MAX > UnixTime::from_secs(1));
    }
}
