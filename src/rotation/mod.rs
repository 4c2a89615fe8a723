//! Three-phase zero-downtime key rotation across a fleet sharing one keyset.

mod admission;
mod cache;
mod config;
mod operations;
mod reservations;
mod scheduler;
mod timeline;

pub use config::SchedulerConfig;
pub use operations::{init_keyset, rotate_store_at};
pub use scheduler::{RotationScheduler, SchedulerStatus};
pub use timeline::{
    Phase, RingPlan, RotateMode, Timing, in_flight, next_change_after, ring_at, rotated, unseals_at,
};
