//! A deterministic fleet simulation of stateseal: N instances running the
//! project's real [`RotationScheduler`](stateseal::RotationScheduler) (its
//! admission, timeline, claims and pacing) and real envelopes, on a virtual
//! clock through the `_at(now)` functions, against a store model (one
//! object with compare-and-swap, conditional reads, a per-object write rate
//! limit, latency, outages and partitions) and a KMS model (a shared quota,
//! latency). Nothing sleeps; one seed gives one run.
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
//! assert!(report.cold_start_s < 60.0);
//! # Ok::<(), stateseal::Error>(())
//! ```

#![forbid(unsafe_code)]

mod fleet;
mod kms_model;
mod report;
mod rng;
mod scenario;
mod series;
mod store_model;

pub use kms_model::KmsProfile;
pub use report::{Report, RotationRecord, table};
pub use scenario::{KmsKind, Scenario, StoreKind};
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
