//! The fleet's timing profile (R, S, T, P): how fast keys propagate, how far
//! clocks may differ, how long states live. The keyset document carries it so
//! every server and operator rotates on the same timeline.

use crate::error::Error;

/// Timing parameters, in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    /// R: how often instances re-read the keyset at the least (each wait is
    /// drawn from the last tenth below R, see `rotation::RefreshPacing`).
    pub refresh_interval: f64,
    /// S: the largest clock difference between instances.
    pub max_skew: f64,
    /// T: how long a sealed state lives.
    pub ttl: f64,
    /// P: how long a new key is known before it seals (default 2R + S).
    pub propagation: f64,
}

/// R = 30 s, S = 60 s, T = the envelope's default TTL (600 s), P = 2R + S.
impl Default for Timing {
    fn default() -> Self {
        Self::new(30.0, 60.0, crate::envelope::DEFAULT_TTL.as_secs_f64())
    }
}

impl Timing {
    /// R, S and T, with P = 2R + S.
    pub fn new(refresh_interval: f64, max_skew: f64, ttl: f64) -> Self {
        Self {
            refresh_interval,
            max_skew,
            ttl,
            propagation: 2.0 * refresh_interval + max_skew,
        }
    }

    /// Overrides P.
    pub fn with_propagation(mut self, propagation: f64) -> Self {
        self.propagation = propagation;
        self
    }

    /// How long after a new key activates the previous one retires: P + T + S.
    pub fn retire_delay(&self) -> f64 {
        self.propagation + self.ttl + self.max_skew
    }

    /// Checks the parameters make zero-downtime rotation possible.
    ///
    /// # Errors
    /// [`Error::Config`] naming the parameter.
    pub fn validate(&self) -> Result<(), Error> {
        // Ten years: anything longer is a unit mistake, and sums of these stay representable.
        let finite = |v: f64| v.is_finite() && v <= 10.0 * 365.25 * 86_400.0;
        let cfg = |m: String| Err(Error::Config(m));
        if !(finite(self.refresh_interval) && self.refresh_interval > 0.0) {
            return cfg(
                "refresh_interval must be a positive number of seconds (at most 10 years)".into(),
            );
        }
        if !(finite(self.max_skew) && self.max_skew >= 0.0) {
            return cfg(
                "max_skew must be zero or a positive number of seconds (at most 10 years)".into(),
            );
        }
        if !(finite(self.ttl) && self.ttl > 0.0) {
            return cfg("ttl must be a positive number of seconds (at most 10 years)".into());
        }
        // Jitter stretches one interval by up to 10%.
        let floor = self.refresh_interval * 1.1 + self.max_skew;
        if !(finite(self.propagation) && self.propagation >= floor) {
            return cfg(format!(
                "propagation ({}) must be at least 1.1 x refresh_interval + max_skew ({floor}) so every instance knows a key before it seals",
                self.propagation
            ));
        }
        Ok(())
    }
}
