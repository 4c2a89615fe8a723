//! The stores and KMSs a scenario names, with the limits their providers
//! document (docs/operations.md cites each), and how stateseal's clients
//! for them retry a throttled call before stateseal sees an error.

use std::str::FromStr;

use stateseal::Error;

use crate::kms_model::KmsProfile;
use crate::retry::RetryPolicy;
use crate::store_model::StoreProfile;

/// Where the keyset lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// Cloud Storage: one write per second per object (bursts of a few), about
    /// 5,000 reads per second before the bucket's ramp-up; answers 429.
    Gcs,
    /// S3: 5,500 GET/HEAD per second per prefix, answered 503 SlowDown beyond;
    /// a few conditional writes per second per object under contention.
    S3,
    /// Vault KV v2: no published limit; a rate-limit quota an operator sets
    /// (modelled at 5,000 reads per second), answered 429.
    Vault,
}

/// Which KMS holds the KEK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KmsKind {
    /// AWS KMS: 10,000 cryptographic requests per second shared by the
    /// account and region, throttled per second (ThrottlingException).
    Aws,
    /// Cloud KMS: 60,000 cryptographic requests per minute, enforced per
    /// second (1,000 in any one second), answered RESOURCE_EXHAUSTED.
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
                reads_per_second: 5_000.0,
                latency: 0.05,
                retry: RetryPolicy::ObjectStore,
            },
            Self::S3 => StoreProfile {
                writes_per_second: 5.0,
                write_burst: 10.0,
                reads_per_second: 5_500.0,
                latency: 0.03,
                retry: RetryPolicy::ObjectStore,
            },
            Self::Vault => StoreProfile {
                writes_per_second: 100.0,
                write_burst: 100.0,
                reads_per_second: 5_000.0,
                latency: 0.005,
                retry: RetryPolicy::Never,
            },
        }
    }
}

impl KmsKind {
    /// The model's quota for this KMS.
    pub fn profile(self) -> KmsProfile {
        match self {
            Self::Aws => KmsProfile {
                quota_per_s: 10_000,
                latency: 0.01,
                retry: RetryPolicy::AwsStandard,
            },
            Self::Gcp => KmsProfile {
                quota_per_s: 1_000,
                latency: 0.03,
                retry: RetryPolicy::NotOnQuota,
            },
            Self::Vault => KmsProfile {
                quota_per_s: 5_000,
                latency: 0.005,
                retry: RetryPolicy::Never,
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

/// Who writes the keyset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    /// What deploy/ ships: read-only servers (no rotation by age, no
    /// renewals) and a `stateseal rotate --if-due` job every hour.
    Rotator,
    /// Servers that write: each may claim and rotate by age, and renew.
    Servers,
}

impl FromStr for Topology {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "rotator" => Ok(Self::Rotator),
            "servers" => Ok(Self::Servers),
            _ => Err(Error::Config(format!(
                "topology {s:?}: expected rotator or servers"
            ))),
        }
    }
}
