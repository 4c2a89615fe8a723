//! The fleet's timing profile (R, S, T, P): how fast keys propagate, how far
//! clocks may differ, how long states live. The keyset document carries it so
//! every server and operator rotates on the same timeline.

use std::time::Duration;

use crate::error::Error;

/// Ten years: anything longer is a unit mistake, and sums of these stay
/// representable (as instants and as the document's seconds).
const LONGEST: Duration = Duration::from_secs(315_576_000);

/// Timing parameters.
///
/// ```
/// use std::time::Duration;
/// use stateseal::rotation::Timing;
/// let timing = Timing::new(Duration::from_secs(30), Duration::from_secs(60), Duration::from_secs(600));
/// assert_eq!(timing.propagation, Duration::from_secs(120)); // 2R + S
/// assert_eq!(timing.retire_delay(), Duration::from_secs(780)); // P + T + S
/// assert!(timing.validate().is_ok());
/// let late = timing.with_propagation(Duration::from_secs(60));
/// assert!(late.validate().is_err()); // P < 1.1 R + S
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// R: how often instances re-read the keyset at the least (each wait is
    /// drawn from the last tenth below R, see `rotation::RefreshPacing`).
    pub refresh_interval: Duration,
    /// S: the largest clock difference between instances.
    pub max_skew: Duration,
    /// T: how long a sealed state lives.
    pub ttl: Duration,
    /// P: how long a new key is known before it seals (default 2R + S).
    pub propagation: Duration,
}

/// R = 30 s, S = 60 s, T = the envelope's default TTL (600 s), P = 2R + S.
impl Default for Timing {
    fn default() -> Self {
        Self::new(
            Duration::from_secs(30),
            Duration::from_secs(60),
            crate::envelope::DEFAULT_TTL,
        )
    }
}

impl Timing {
    /// R, S and T, with P = 2R + S.
    pub fn new(refresh_interval: Duration, max_skew: Duration, ttl: Duration) -> Self {
        Self {
            refresh_interval,
            max_skew,
            ttl,
            propagation: refresh_interval.saturating_mul(2).saturating_add(max_skew),
        }
    }

    /// R, S, T and P (`None`: 2R + S) from the seconds the keyset document
    /// and the settings carry. A value that is no duration (negative, not a
    /// number, over ten years) is refused with the message
    /// [`Timing::validate`] gives for it.
    ///
    /// ```
    /// use std::time::Duration;
    /// use stateseal::rotation::Timing;
    /// let timing = Timing::try_from_secs_f64(1.5, 0.0, 20.0, None)?;
    /// assert_eq!(timing.propagation, Duration::from_secs(3));
    /// let err = Timing::try_from_secs_f64(-1.0, 0.0, 20.0, None).unwrap_err();
    /// assert!(err.to_string().contains("refresh_interval must be a positive number of seconds"));
    /// # Ok::<(), stateseal::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Config`] naming the parameter.
    pub fn try_from_secs_f64(
        refresh_interval: f64,
        max_skew: f64,
        ttl: f64,
        propagation: Option<f64>,
    ) -> Result<Self, Error> {
        let r = duration(refresh_interval).ok_or_else(refresh_interval_error)?;
        let s = duration(max_skew).ok_or_else(max_skew_error)?;
        let t = duration(ttl).ok_or_else(ttl_error)?;
        let timing = Self::new(r, s, t);
        match propagation {
            None => Ok(timing),
            Some(p) => match duration(p) {
                Some(p) => Ok(timing.with_propagation(p)),
                None => Err(propagation_error(p, floor(r, s))),
            },
        }
    }

    /// Overrides P.
    pub fn with_propagation(mut self, propagation: Duration) -> Self {
        self.propagation = propagation;
        self
    }

    /// How long after a new key activates the previous one retires: P + T + S.
    pub fn retire_delay(&self) -> Duration {
        self.propagation
            .saturating_add(self.ttl)
            .saturating_add(self.max_skew)
    }

    /// Checks the parameters make zero-downtime rotation possible.
    ///
    /// # Errors
    /// [`Error::Config`] naming the parameter.
    pub fn validate(&self) -> Result<(), Error> {
        if self.refresh_interval.is_zero() || self.refresh_interval > LONGEST {
            return Err(refresh_interval_error());
        }
        if self.max_skew > LONGEST {
            return Err(max_skew_error());
        }
        if self.ttl.is_zero() || self.ttl > LONGEST {
            return Err(ttl_error());
        }
        // Jitter stretches one interval by up to 10%.
        let floor = floor(self.refresh_interval, self.max_skew);
        let p = self.propagation.as_secs_f64();
        if self.propagation > LONGEST || p < floor {
            return Err(propagation_error(p, floor));
        }
        Ok(())
    }
}

/// `secs` as a duration, when it is one of at most ten years.
fn duration(secs: f64) -> Option<Duration> {
    (secs >= 0.0 && secs <= LONGEST.as_secs_f64())
        .then(|| Duration::try_from_secs_f64(secs).ok())
        .flatten()
}

/// The least P: 1.1 R + S, in seconds.
fn floor(refresh_interval: Duration, max_skew: Duration) -> f64 {
    refresh_interval.as_secs_f64() * 1.1 + max_skew.as_secs_f64()
}

/// What R must be (the configuration's reader of seconds says it too).
pub(crate) const REFRESH_INTERVAL_RULE: &str =
    "refresh_interval must be a positive number of seconds (at most 10 years)";

/// What S must be.
pub(crate) const MAX_SKEW_RULE: &str =
    "max_skew must be zero or a positive number of seconds (at most 10 years)";

fn refresh_interval_error() -> Error {
    Error::Config(REFRESH_INTERVAL_RULE.into())
}

fn max_skew_error() -> Error {
    Error::Config(MAX_SKEW_RULE.into())
}

fn ttl_error() -> Error {
    Error::Config("ttl must be a positive number of seconds (at most 10 years)".into())
}

fn propagation_error(propagation: f64, floor: f64) -> Error {
    Error::Config(format!(
        "propagation ({propagation}) must be at least 1.1 x refresh_interval + max_skew ({floor}) so every instance knows a key before it seals"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(r: Result<impl std::fmt::Debug, Error>) -> String {
        match r {
            Err(Error::Config(m)) => m,
            other => panic!("expected a configuration error, got {other:?}"),
        }
    }

    /// A value the document or the settings carry that is no duration gets
    /// the message `validate` gives for that parameter: the words a user saw
    /// when the profile held f64 seconds.
    #[test]
    fn seconds_that_are_no_duration_are_refused_as_validate_refuses_them() {
        let zero = Duration::ZERO;
        let t = Timing::default();
        let refresh = message(
            Timing {
                refresh_interval: zero,
                ..t
            }
            .validate(),
        );
        let skew = message(
            Timing {
                max_skew: LONGEST * 2,
                ..t
            }
            .validate(),
        );
        let ttl = message(Timing { ttl: zero, ..t }.validate());
        for bad in [-1.0, f64::NAN, f64::INFINITY, 1e10, -0.5e-9] {
            assert_eq!(
                message(Timing::try_from_secs_f64(bad, 60.0, 600.0, None)),
                refresh,
                "{bad}"
            );
            assert_eq!(
                message(Timing::try_from_secs_f64(30.0, bad, 600.0, None)),
                skew,
                "{bad}"
            );
            assert_eq!(
                message(Timing::try_from_secs_f64(30.0, 60.0, bad, None)),
                ttl,
                "{bad}"
            );
        }
        assert_eq!(
            message(Timing::try_from_secs_f64(30.0, 60.0, 600.0, Some(-1.0))),
            "propagation (-1) must be at least 1.1 x refresh_interval + max_skew (93) so every instance knows a key before it seals"
        );
        assert_eq!(
            message(
                Timing::default()
                    .with_propagation(Duration::from_secs(92))
                    .validate()
            ),
            "propagation (92) must be at least 1.1 x refresh_interval + max_skew (93) so every instance knows a key before it seals"
        );
    }

    /// Seconds as the document writes them come back as the same seconds,
    /// fractions included, so a rewritten document carries its profile unchanged.
    #[test]
    fn document_seconds_round_trip() {
        for (r, s, t, p) in [
            (30.0, 60.0, 600.0, 120.0),
            (0.1, 0.25, 600.5, 1.35),
            (1.5, 0.0, 20.0, 3.0),
            (315_576_000.0, 315_576_000.0, 315_576_000.0, 315_576_000.0),
        ] {
            let timing = Timing::try_from_secs_f64(r, s, t, Some(p)).expect("valid");
            let back = [
                timing.refresh_interval.as_secs_f64(),
                timing.max_skew.as_secs_f64(),
                timing.ttl.as_secs_f64(),
                timing.propagation.as_secs_f64(),
            ];
            assert_eq!(back, [r, s, t, p]);
        }
    }

    /// Sums of unvalidated profiles saturate instead of panicking.
    #[test]
    fn unvalidated_extremes_saturate() {
        let t = Timing::new(Duration::MAX, Duration::MAX, Duration::MAX);
        assert_eq!(t.propagation, Duration::MAX);
        assert_eq!(t.retire_delay(), Duration::MAX);
        assert!(t.validate().is_err());
    }
}
