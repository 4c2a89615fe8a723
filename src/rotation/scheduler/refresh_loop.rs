//! The refresh loop and its pacing: every interval at most R, spread across
//! the fleet, with jittered exponential backoff while refreshes fail.

use std::time::Duration;

use super::RotationScheduler;
use crate::keyset::Timing;

/// The least wait after a failed refresh, before jitter (doubling per failure).
const BACKOFF_BASE: Duration = Duration::from_millis(500);

/// When an instance reads the store next. Pure: the caller supplies a uniform
/// random `unit` in `[0, 1)`, so the fleet simulation and the tests drive the
/// same arithmetic as the running loop.
///
/// - The first wait after a successful start is drawn from `(0, R]` (full
///   jitter): a fleet started at once spreads its reads over one interval
///   instead of reading together every R.
/// - Every later wait after a success is drawn from `[(1 − jitter)·R, R]`:
///   never longer than R, which the timeline's propagation window counts on
///   (P ≥ 1.1·R + S leaves the tenth for the refresh's own duration).
/// - After the n-th failure in a row the wait is drawn from
///   `[0, min(R, 0.5 s · 2^(n−1))]` (exponential backoff, full jitter, capped
///   at R): a fleet that lost the store, or a KMS quota, comes back spread out.
///
/// ```
/// use std::time::Duration;
/// use stateseal::rotation::{RefreshPacing, Timing};
/// let pacing = RefreshPacing::new(&Timing::default(), 0.1);
/// assert_eq!(pacing.after_success(0.0), Duration::from_secs(30));
/// assert!(pacing.after_success(0.999).abs_diff(Duration::from_secs(27)) < Duration::from_millis(10));
/// assert_eq!(pacing.after_failure(1, 0.5), Duration::from_millis(250));
/// assert_eq!(pacing.after_failure(20, 0.5), Duration::from_secs(15), "capped at R");
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RefreshPacing {
    interval: Duration,
    jitter: f64,
}

impl RefreshPacing {
    /// Pacing for the refresh interval of `timing` with `jitter` (a fraction of R).
    pub fn new(timing: &Timing, jitter: f64) -> Self {
        Self {
            interval: timing.refresh_interval,
            jitter: jitter.clamp(0.0, 1.0),
        }
    }

    /// The wait before the first scheduled refresh after a successful start
    /// (never zero: at least a nanosecond).
    pub fn first(&self, unit: f64) -> Duration {
        self.interval
            .mul_f64(1.0 - unit.clamp(0.0, 1.0))
            .max(Duration::from_nanos(1))
    }

    /// The wait after a successful refresh.
    pub fn after_success(&self, unit: f64) -> Duration {
        self.interval
            .mul_f64(1.0 - self.jitter * unit.clamp(0.0, 1.0))
    }

    /// The wait after the `failures`-th failed refresh in a row (from 1).
    pub fn after_failure(&self, failures: u32, unit: f64) -> Duration {
        let exponent = failures.clamp(1, 64) - 1;
        // 0.5 s · 2^63 is past any Duration: saturated, then capped at R.
        let ceiling = BACKOFF_BASE
            .checked_mul(1u32.checked_shl(exponent).unwrap_or(u32::MAX))
            .unwrap_or(Duration::MAX)
            .min(self.interval);
        ceiling.mul_f64(unit.clamp(0.0, 1.0))
    }
}

/// A uniform draw from `[0, 1)` (0.5 if the system's random source fails:
/// pacing then loses its spread, never its bound).
pub(crate) fn unit_draw() -> f64 {
    let mut b = [0u8; 8];
    if crate::random::fill_os(&mut b).is_ok() {
        (u64::from_le_bytes(b) >> 11) as f64 / (1u64 << 53) as f64
    } else {
        0.5
    }
}

impl RotationScheduler {
    /// The pacing of this scheduler's refresh loop.
    pub fn pacing(&self) -> RefreshPacing {
        RefreshPacing::new(&self.inner.config.timing, self.inner.config.jitter)
    }

    /// Runs the refresh loop (see [`RefreshPacing`]). A scheduler that has not
    /// refreshed yet refreshes at once; one that has (a server's start-up
    /// refresh) first waits a random part of one interval. Needs a tokio runtime.
    pub fn spawn(&self) -> tokio::task::JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            let pacing = this.pacing();
            let mut failures = 0u32;
            if this.status().last_refresh.is_some() {
                tokio::time::sleep(pacing.first(unit_draw())).await;
            }
            loop {
                let ok = this.refresh().await.is_ok();
                failures = if ok { 0 } else { failures.saturating_add(1) };
                let wait = if ok {
                    pacing.after_success(unit_draw())
                } else {
                    pacing.after_failure(failures, unit_draw())
                };
                tokio::time::sleep(wait).await;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_stay_within_their_bounds() {
        let secs = Duration::from_secs_f64;
        let p = RefreshPacing::new(
            &Timing::new(
                Duration::from_secs(30),
                Duration::from_secs(60),
                Duration::from_secs(600),
            ),
            0.1,
        );
        for i in 0..=100 {
            let u = f64::from(i) / 100.0;
            let first = p.first(u);
            assert!(first > Duration::ZERO && first <= secs(30.0), "{first:?}");
            let ok = p.after_success(u);
            assert!((secs(27.0)..=secs(30.0)).contains(&ok), "{ok:?}");
            for n in 1..40 {
                let backoff = p.after_failure(n, u);
                let ceiling = secs((0.5 * 2f64.powi(n as i32 - 1)).min(30.0));
                assert!(backoff <= ceiling, "{n}: {backoff:?}");
            }
        }
        assert_eq!(
            p.after_failure(0, 1.0),
            secs(0.5),
            "0 counts as the first failure"
        );
        assert_eq!(p.after_failure(u32::MAX, 1.0), secs(30.0));
        assert_eq!(p.first(1.0), Duration::from_nanos(1), "never zero");
    }
}
