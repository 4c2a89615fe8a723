//! Three-phase zero-downtime key rotation across a fleet sharing one keyset.

mod admission;
mod cache;
mod config;
mod if_due;
mod inspect;
mod mac_keys;
mod newest;
mod operations;
mod proof;
mod reservations;
mod revoke;
mod rewrite;
mod rotate;
mod scheduler;
mod timeline;
mod trust;

pub use config::{SchedulerConfig, SchedulerConfigBuilder};
pub use if_due::{IfDue, renew_if_due, rotate_if_due, rotation_due};
pub use inspect::{
    Availability, CheckReport, EntryStatus, KeysetStatus, Role, check_keyset, describe_keyset,
    keyset_ring, keyset_status,
};
pub use operations::{
    DEFAULT_MAX_LIVE_KEYS, NEW_KEY_FORMAT, RotationPlan, init_keyset, load_existing, load_verified,
    operator_generation, plan_rotation,
};
pub use proof::unwrap_entry;
pub use revoke::{Revoked, revoke};
pub use rewrite::{renew_keyset, upgrade_keyset};
pub use rotate::{rotate_keyset, rotate_store_at};
pub(crate) use scheduler::unit_draw;
pub use scheduler::{CLAIM_TTL, NextEvent, RefreshPacing, RotationScheduler, SchedulerStatus};
pub use timeline::{Phase, RotateMode, Timing};
/// The timeline as pure functions of (document, time): exposed for property
/// tests and fuzzing only (feature `internals`, no stability promise).
#[cfg(feature = "internals")]
pub use timeline::{RingPlan, in_flight, next_change_after, ring_at, rotated, unseals_at};
pub use trust::{
    DEFAULT_KEYSET_VALIDITY, KeysetTrust, TrustPolicy, VerifiedKeyset, seal_with_new_mac_key,
};
