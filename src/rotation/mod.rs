//! Three-phase zero-downtime key rotation across a fleet sharing one keyset.

mod cache;
mod config;
mod scheduler;
mod timeline;

pub use config::SchedulerConfig;
pub use scheduler::{RotationScheduler, SchedulerStatus, init_keyset, rotate_store_at};
pub use timeline::{
    Phase, RingPlan, RotateMode, Timing, in_flight, next_change_after, ring_at, rotated, unseals_at,
};
