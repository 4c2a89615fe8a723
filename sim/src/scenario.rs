//! What a run simulates: the fleet, its stores and KMS, its timing, and the
//! faults and traffic it meets.

use std::str::FromStr;

use stateseal::Error;
use stateseal::rotation::Timing;

use crate::kms_model::KmsProfile;
use crate::store_model::StoreProfile;

/// Where the keyset lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// Cloud Storage: about one write per second per object, bursts of a few.
    Gcs,
    /// S3: a few conditional writes per second per object under contention.
    S3,
    /// Vault KV v2.
    Vault,
}

/// Which KMS holds the KEK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KmsKind {
    /// AWS KMS: 10,000 cryptographic requests per second, shared (the default quota).
    Aws,
    /// Cloud KMS: 60,000 cryptographic requests per minute per project.
    Gcp,
    /// Vault transit: bounded by the cluster; modelled at 5,000 per second.
    Vault,
}

impl StoreKind {
    /// The model's limits for this store.
    pub fn profile(self) -> StoreProfile {
        match self {
            Self::Gcs => StoreProfile {
                writes_per_second: 1.0,
                write_burst: 5.0,
                latency: 0.05,
            },
            Self::S3 => StoreProfile {
                writes_per_second: 5.0,
                write_burst: 10.0,
                latency: 0.03,
            },
            Self::Vault => StoreProfile {
                writes_per_second: 100.0,
                write_burst: 100.0,
                latency: 0.005,
            },
        }
    }
}

impl KmsKind {
    /// The model's quota for this KMS.
    pub fn profile(self) -> KmsProfile {
        match self {
            Self::Aws => KmsProfile {
                quota: 10_000,
                window: 1.0,
                latency: 0.01,
            },
            Self::Gcp => KmsProfile {
                quota: 60_000,
                window: 60.0,
                latency: 0.03,
            },
            Self::Vault => KmsProfile {
                quota: 5_000,
                window: 1.0,
                latency: 0.005,
            },
        }
    }
}

impl FromStr for StoreKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "gcs" => Ok(Self::Gcs),
            "s3" => Ok(Self::S3),
            "vault" => Ok(Self::Vault),
            _ => Err(Error::Config(format!(
                "store {s:?}: expected gcs, s3 or vault"
            ))),
        }
    }
}

impl FromStr for KmsKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "aws" => Ok(Self::Aws),
            "gcp" => Ok(Self::Gcp),
            "vault" => Ok(Self::Vault),
            _ => Err(Error::Config(format!(
                "kms {s:?}: expected aws, gcp or vault"
            ))),
        }
    }
}

/// One simulated run. Times are seconds from the start of the run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Scenario {
    /// Instances in the fleet.
    pub instances: usize,
    /// Simulated days.
    pub days: f64,
    /// The fleet's timing profile (R, S, T, P).
    pub timing: Timing,
    /// Servers rotate by age at this period (they may write, and claim).
    pub rotation_period: f64,
    /// Every this many seconds the whole fleet restarts, one instance after
    /// another over `restart_window`.
    pub restart_every: Option<f64>,
    /// How long one rolling restart takes end to end.
    pub restart_window: f64,
    /// The store is unreachable for everyone: (start, duration).
    pub store_outage: Option<(f64, f64)>,
    /// Instance 0 is cut off from the store: (start, duration).
    pub partition: Option<(f64, f64)>,
    /// An operator's forced rotation at this time.
    pub emergency_at: Option<f64>,
    /// Conversations started per second, fleet-wide (each round sealed on a
    /// random instance and verified on another).
    pub rounds_per_second: f64,
    /// The store model.
    pub store: StoreProfile,
    /// The KMS model.
    pub kms: KmsProfile,
    /// Instances start within this many seconds of each other at the beginning.
    pub start_spread: f64,
    /// The seed of every random choice.
    pub seed: u64,
    /// Drive the scheduler for every refresh, idle or not (slow; for checking).
    pub exact: bool,
}

impl Scenario {
    /// The scenario for `instances`: 7 days, one scheduled rotation a
    /// day (servers that may write, with claims), a rolling restart of the
    /// whole fleet every 6 h, a 10-minute store outage, instance 0 partitioned
    /// for 2 h across a rotation, an emergency rotation, and traffic. P is
    /// 330 s so that the 10-minute outage stays within the 2P staleness bound.
    pub fn fleet_week(instances: usize) -> Self {
        let day = 86_400.0;
        Self {
            instances,
            days: 7.0,
            timing: Timing::new(30.0, 60.0, 600.0).with_propagation(330.0),
            rotation_period: day,
            restart_every: Some(6.0 * 3600.0),
            restart_window: 600.0,
            store_outage: Some((2.5 * day, 600.0)),
            // Across the third scheduled rotation (due about 3 days in).
            partition: Some((3.0 * day - 3600.0, 7200.0)),
            emergency_at: Some(4.5 * day),
            rounds_per_second: 0.2,
            store: StoreKind::Gcs.profile(),
            kms: KmsKind::Aws.profile(),
            start_spread: 5.0,
            seed: 20_261_125,
            exact: false,
        }
    }

    /// Capacity planning (`stateseal simulate`): one day with one rotation,
    /// one rolling restart, on the given store and KMS, default timing.
    pub fn capacity(instances: usize, store: StoreKind, kms: KmsKind) -> Self {
        Self {
            instances,
            days: 1.0,
            timing: Timing::default(),
            rotation_period: 12.0 * 3600.0,
            restart_every: Some(18.0 * 3600.0),
            restart_window: 600.0,
            store_outage: None,
            partition: None,
            emergency_at: None,
            rounds_per_second: 0.1,
            store: store.profile(),
            kms: kms.profile(),
            start_spread: 5.0,
            seed: 1,
            exact: false,
        }
    }

    /// The simulated span in seconds.
    pub fn span(&self) -> f64 {
        self.days * 86_400.0
    }

    /// Checks the scenario can run.
    ///
    /// # Errors
    /// [`Error::Config`] naming the field.
    pub fn validate(&self) -> Result<(), Error> {
        self.timing.validate()?;
        let bad = |m: &str| Err(Error::Config(m.to_owned()));
        if self.instances == 0 || self.instances > 1_000_000 {
            return bad("instances must be between 1 and 1,000,000");
        }
        if !(self.days.is_finite() && self.days > 0.0 && self.days <= 366.0) {
            return bad("days must be between 0 and 366");
        }
        if !(self.rotation_period.is_finite()
            && self.rotation_period > self.timing.propagation + self.timing.retire_delay())
        {
            return bad("rotation_period must be longer than one full rotation (2P + T + S)");
        }
        if !(self.rounds_per_second.is_finite() && self.rounds_per_second >= 0.0) {
            return bad("rounds_per_second must be zero or positive");
        }
        if self.partition.is_some() && self.instances < 2 {
            return bad("a partition needs at least two instances");
        }
        Ok(())
    }
}
