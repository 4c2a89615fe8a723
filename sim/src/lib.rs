//! A deterministic fleet simulation of stateseal: N instances running the
//! project's real [`RotationScheduler`](stateseal::RotationScheduler) (its
//! admission, timeline, claims and pacing) and real envelopes, each on its
//! own clock (offsets up to the skew apart), through the `_at(now)`
//! functions, against a store model (one object with compare-and-swap,
//! conditional reads, the service's read and write limits, latency,
//! outages and partitions) and a KMS model (a quota enforced per second,
//! latency), both retrying as the real clients do. Every request is its own
//! instant on a virtual clock, so reads, KMS calls and compare-and-swaps of
//! different instances interleave and race. Servers start as the real ones
//! do (exit at `ready_timeout`, restarted with CrashLoopBackOff), and by
//! default stay read-only beside deploy/'s hourly `rotate --if-due` job.
//! Nothing sleeps; one seed gives one run.
//!
//! A refresh that the scheduler itself declares idle (the store version it
//! last read is unchanged and [`next_event_at`](stateseal::RotationScheduler::next_event_at)
//! is still ahead) is counted as a conditional read without calling the
//! scheduler; [`Scenario::exact`] calls it for every refresh instead, and the
//! tests hold both modes to the same counts.
//!
//! ```
//! use stateseal_sim::{KmsKind, Scenario, StoreKind, run};
//! let mut s = Scenario::capacity(20, StoreKind::Gcs, KmsKind::Aws);
//! s.days = 0.05;
//! let report = run(&s)?;
//! assert_eq!(report.rejected_rounds, 0);
//! assert_eq!(report.cold_start_late, 0);
//! assert_eq!((report.kms_throttled, report.startup_exits), (0, 0));
//! # Ok::<(), stateseal::Error>(())
//! ```

#![forbid(unsafe_code)]

mod fleet;
mod kms_model;
mod report;
mod retry;
mod rng;
mod scenario;
mod series;
mod store_model;
mod virtual_time;

pub use kms_model::KmsProfile;
pub use report::{Report, RotationRecord, table};
pub use retry::RetryPolicy;
pub use scenario::{KmsKind, Scenario, StoreKind, TRAFFIC_FROM, Topology};
pub use store_model::StoreProfile;

/// Runs `scenario` to its end.
///
/// # Errors
/// [`stateseal::Error::Config`] for an invalid scenario; any error of the
/// operator's own setup (creating the keyset), which would be a bug.
pub fn run(scenario: &Scenario) -> Result<Report, stateseal::Error> {
    scenario.validate()?;
    fleet::Fleet::new(scenario)?.run()
}
