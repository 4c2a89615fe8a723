//! Scheduler configuration with validated defaults.

use std::time::Duration;

use super::timeline::Timing;
use super::trust::{DEFAULT_KEYSET_VALIDITY, TrustPolicy};
use crate::error::Error;

/// How the rotation scheduler behaves. Built with [`SchedulerConfig::builder`],
/// which validates; `Default` is the validated defaults.
///
/// ```
/// use std::time::Duration;
/// use stateseal::rotation::{SchedulerConfig, Timing};
/// let secs = Duration::from_secs;
/// let config = SchedulerConfig::builder()
///     .timing(Timing::new(secs(1), secs(2), secs(20)))
///     .max_key_age(secs(60))
///     .build()?;
/// assert_eq!(config.max_key_age, secs(60));
/// assert!(SchedulerConfig::builder().max_key_age(Duration::ZERO).build().is_err());
/// # Ok::<(), stateseal::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SchedulerConfig {
    /// R, S, T and P.
    pub timing: Timing,
    /// After this long a cached unwrap is renewed with the KMS (default 1 h).
    pub max_key_age: Duration,
    /// How long past `max_key_age` a key keeps serving while the KMS is unreachable (default 24 h).
    pub outage_grace: Duration,
    /// Once the keyset store has been unreadable (or held only refused
    /// documents) this long, the instance stops sealing and reports not-ready;
    /// states it sealed still verify. `None`, the default, derives it from the
    /// fleet's timing profile: 2P (see [`SchedulerConfig::store_staleness_limit`]).
    pub max_store_staleness: Option<Duration>,
    /// Rotate when the primary key is this old (default 30 days; `None`: never by age).
    pub rotation_period: Option<Duration>,
    /// Rotate once the fleet has reserved this many seals under the primary key
    /// (default 2^31). AES-GCM with random nonces allows 2^32 seals per key in
    /// total, across every process that ever held it; the default leaves the
    /// other half for the propagation window, during which the old key still seals.
    pub max_seals_per_key: u64,
    /// Smallest block of seals an instance reserves in the keyset at a time
    /// (default 2^20; `None`: no reservations, each instance counts only its own
    /// seals, which restarts and fleet growth defeat).
    pub seal_reservation_block: Option<u64>,
    /// Refresh interval jitter as a fraction (default 0.1 = ±10%).
    pub jitter: f64,
    /// Which keyset documents this instance believes: pins, minimum
    /// generation, unauthenticated documents (default: nothing pinned, which
    /// only a `file://` store allows).
    pub trust: TrustPolicy,
    /// How long a document this instance writes stays fresh (default 7 days).
    pub keyset_validity: Duration,
    /// Renew the document (a write with the KEK) when less than half its
    /// validity is left (default true; read-only servers set false and leave
    /// it to the rotator).
    pub renew_keyset: bool,
    /// This instance's name in rotation claims and rendezvous hashing (`None`,
    /// the default: a random `i_…` id drawn at start; a pod name fits).
    pub instance_id: Option<String>,
    /// The claim rule before claimants stepped back: a claimant whose
    /// rotation failed claims again at its next refresh. Only for the fleet
    /// simulation's control that shows the frozen rotation it caused; hidden,
    /// and no part of the stable API.
    #[doc(hidden)]
    pub legacy_reclaim: bool,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        Self {
            timing: Timing::default(),
            max_key_age: Duration::from_secs(3600),
            outage_grace: Duration::from_secs(24 * 3600),
            max_store_staleness: None,
            rotation_period: Some(Duration::from_secs(30 * 24 * 3600)),
            max_seals_per_key: 1 << 31,
            seal_reservation_block: Some(1 << 20),
            jitter: 0.1,
            trust: TrustPolicy::default(),
            keyset_validity: DEFAULT_KEYSET_VALIDITY,
            renew_keyset: true,
            instance_id: None,
            legacy_reclaim: false,
        }
    }
}

impl SchedulerConfig {
    /// A builder starting from the defaults.
    pub fn builder() -> SchedulerConfigBuilder {
        SchedulerConfigBuilder(Self::default())
    }

    /// A builder starting from this configuration.
    pub fn to_builder(&self) -> SchedulerConfigBuilder {
        SchedulerConfigBuilder(self.clone())
    }

    /// Whether the legacy claim rule is on (the simulation's control only).
    pub(crate) fn legacy_reclaim(&self) -> bool {
        self.legacy_reclaim
    }

    /// The store staleness limit in force for a fleet on `timing`:
    /// `max_store_staleness`, or by default 2P.
    ///
    /// Why 2P: an instance cut off from the store right after its last read
    /// keeps its primary K. The fleet may rotate at once: the new key
    /// activates P later, and K retires P + T + S after that. A state the cut-off
    /// instance seals at time s lives until s + T, on clocks up to S apart; it
    /// verifies everywhere as long as s + T + S ≤ t0 + 2P + T + S, i.e. while it
    /// has been cut off for at most 2P. (A compromise rotation retires K at once
    /// and breaks every state under it, by design.)
    ///
    /// ```
    /// use std::time::Duration;
    /// use stateseal::rotation::{SchedulerConfig, Timing};
    /// let secs = Duration::from_secs;
    /// let timing = Timing::new(secs(30), secs(60), secs(600)); // P = 2R + S = 120 s
    /// assert_eq!(SchedulerConfig::default().store_staleness_limit(&timing), secs(240));
    /// let explicit = SchedulerConfig::builder().max_store_staleness(Some(secs(60))).build()?;
    /// assert_eq!(explicit.store_staleness_limit(&timing), secs(60));
    /// # Ok::<(), stateseal::Error>(())
    /// ```
    pub fn store_staleness_limit(&self, timing: &Timing) -> Duration {
        self.max_store_staleness
            .unwrap_or(timing.propagation.saturating_mul(2))
    }

    /// Checks every field; the error names the one to fix.
    ///
    /// # Errors
    /// [`Error::Config`].
    pub fn validate(&self) -> Result<(), Error> {
        self.timing.validate()?;
        let positive = |name: &str, v: Duration| {
            if !v.is_zero() {
                Ok(())
            } else {
                Err(Error::Config(format!(
                    "{name} must be a positive number of seconds"
                )))
            }
        };
        positive("max_key_age", self.max_key_age)?;
        if let Some(s) = self.max_store_staleness {
            positive("max_store_staleness", s)?;
        }
        if let Some(p) = self.rotation_period {
            positive("rotation_period", p)?;
            if p <= self
                .timing
                .propagation
                .saturating_add(self.timing.retire_delay())
            {
                return Err(Error::Config(
                    "rotation_period must be longer than one full rotation (2P + T + S)".into(),
                ));
            }
        }
        if self.max_seals_per_key == 0 || self.max_seals_per_key > 1 << 32 {
            return Err(Error::Config(
                "max_seals_per_key must be between 1 and 2^32".into(),
            ));
        }
        if let Some(block) = self.seal_reservation_block
            && (block == 0 || block > self.max_seals_per_key)
        {
            return Err(Error::Config(
                "seal_reservation_block must be between 1 and max_seals_per_key".into(),
            ));
        }
        if !(0.0..0.5).contains(&self.jitter) {
            return Err(Error::Config("jitter must be in [0, 0.5)".into()));
        }
        if let Some(id) = &self.instance_id
            && !crate::keyset::is_instance_id(id)
        {
            return Err(Error::Config(format!(
                "instance_id {}",
                crate::keyset::INSTANCE_ID_RULE
            )));
        }
        let least = self
            .timing
            .propagation
            .saturating_add(self.timing.max_skew)
            .saturating_mul(4);
        if self.keyset_validity < least {
            return Err(Error::Config(format!(
                "keyset_validity must be at least 4(P + S) = {}s, so that a renewal lands long before the document goes stale",
                least.as_secs_f64()
            )));
        }
        Ok(())
    }
}

/// Builds a validated [`SchedulerConfig`].
#[derive(Debug, Clone)]
#[must_use]
pub struct SchedulerConfigBuilder(SchedulerConfig);

impl SchedulerConfigBuilder {
    /// Sets R, S, T and P.
    pub fn timing(mut self, timing: Timing) -> Self {
        self.0.timing = timing;
        self
    }

    /// Sets `max_key_age`.
    pub fn max_key_age(mut self, age: Duration) -> Self {
        self.0.max_key_age = age;
        self
    }

    /// Sets `outage_grace`.
    pub fn outage_grace(mut self, grace: Duration) -> Self {
        self.0.outage_grace = grace;
        self
    }

    /// Sets `max_store_staleness` (`None`: 2P).
    pub fn max_store_staleness(mut self, limit: Option<Duration>) -> Self {
        self.0.max_store_staleness = limit;
        self
    }

    /// Sets `rotation_period` (`None` disables rotation by age).
    pub fn rotation_period(mut self, period: Option<Duration>) -> Self {
        self.0.rotation_period = period;
        self
    }

    /// Sets `max_seals_per_key`.
    pub fn max_seals_per_key(mut self, seals: u64) -> Self {
        self.0.max_seals_per_key = seals;
        self
    }

    /// Sets `seal_reservation_block` (`None` turns reservations off).
    pub fn seal_reservation_block(mut self, seals: Option<u64>) -> Self {
        self.0.seal_reservation_block = seals;
        self
    }

    /// Sets what documents this instance believes.
    pub fn trust(mut self, trust: TrustPolicy) -> Self {
        self.0.trust = trust;
        self
    }

    /// Sets `keyset_validity`.
    pub fn keyset_validity(mut self, validity: Duration) -> Self {
        self.0.keyset_validity = validity;
        self
    }

    /// Sets `renew_keyset`.
    pub fn renew_keyset(mut self, renew: bool) -> Self {
        self.0.renew_keyset = renew;
        self
    }

    /// Sets `instance_id`.
    pub fn instance_id(mut self, id: impl Into<String>) -> Self {
        self.0.instance_id = Some(id.into());
        self
    }

    /// The configuration, once every field is valid.
    ///
    /// # Errors
    /// [`Error::Config`] naming the field to fix.
    pub fn build(self) -> Result<SchedulerConfig, Error> {
        self.0.validate()?;
        Ok(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bad instance id is refused when the configuration is built, naming
    /// the rule; a pod name is accepted.
    #[test]
    fn instance_ids_follow_the_rule() {
        for bad in [
            String::new(),
            "x".repeat(65),
            "pod 1".into(),
            "ns/pod".into(),
            "pöd".into(),
            "pod\n1".into(),
        ] {
            match SchedulerConfig::builder().instance_id(bad.clone()).build() {
                Err(Error::Config(m)) => assert_eq!(
                    m,
                    format!("instance_id {}", crate::keyset::INSTANCE_ID_RULE),
                    "{bad:?}"
                ),
                other => panic!("{bad:?}: {other:?}"),
            }
        }
        for good in ["pod-7.ns_x", "i_0", &"x".repeat(64)] {
            let c = SchedulerConfig::builder().instance_id(good).build();
            assert_eq!(c.expect("valid").instance_id.as_deref(), Some(good));
        }
    }
}
