//! What a run simulates: the fleet, who writes its keyset, its stores and
//! KMS, its clocks and timing, and the faults and traffic it meets.

use stateseal::Error;
use stateseal::rotation::Timing;
use std::time::Duration;

use crate::kms_model::KmsProfile;
use crate::store_model::StoreProfile;

mod services;

pub use services::{KmsKind, StoreKind, Topology};

/// When conversations start, in seconds into a run: after the fleet's
/// start-up, so a round measures the fleet, not its cold start.
pub const TRAFFIC_FROM: f64 = 60.0;

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
    /// Who writes the keyset: the deploy/ rotator job (default) or the servers.
    pub topology: Topology,
    /// The primary is due for rotation at this age.
    pub rotation_period: f64,
    /// The rotator job runs every this many seconds…
    pub rotator_every: f64,
    /// …first at this time (deploy/'s CronJob: minute 17 of every hour).
    pub rotator_first: f64,
    /// The largest difference between two clocks of the fleet: each instance's
    /// clock is off by a draw from [−skew/2, +skew/2]. Default S.
    pub clock_skew: f64,
    /// A starting server exits when it has no key ring this long after it
    /// started (the server's `ready_timeout`, 10 s by default).
    pub ready_timeout: f64,
    /// Kubernetes' CrashLoopBackOff: the wait before restarting an exited
    /// server, doubling per exit in a row, and its cap.
    pub crash_backoff: (f64, f64),
    /// Every this many seconds the whole fleet restarts, one instance after
    /// another over `restart_window`.
    pub restart_every: Option<f64>,
    /// How long one rolling restart takes end to end.
    pub restart_window: f64,
    /// How long a restarted instance is down: from its old process's end to
    /// its new one's start (1 s; a loopback fleet measures about 0.1 s).
    pub restart_downtime: f64,
    /// The whole fleet starts again at once (within `start_spread`) at this time.
    pub cold_restart_at: Option<f64>,
    /// The store is unreachable for everyone: (start, duration).
    pub store_outage: Option<(f64, f64)>,
    /// Instances `0..partition_size` are cut off from the store: (start, duration).
    pub partition: Option<(f64, f64)>,
    /// How many instances the partition cuts off.
    pub partition_size: usize,
    /// An operator's forced rotation at this time.
    pub emergency_at: Option<f64>,
    /// The first this many instances (or rotator job runs) that call the KMS
    /// to generate a data key are denied it, ever after.
    pub failing_rotators: usize,
    /// Servers re-claim after their own rotation failed (the claim rule
    /// before claimants stepped back): only for the control that shows the
    /// rotation it froze.
    pub legacy_reclaim: bool,
    /// Conversations started per second, fleet-wide (each round sealed on a
    /// random instance and verified on another), from [`TRAFFIC_FROM`] on.
    pub rounds_per_second: f64,
    /// The store model.
    pub store: StoreProfile,
    /// The KMS model.
    pub kms: KmsProfile,
    /// Instances start within this many seconds of each other at a cold start.
    pub start_spread: f64,
    /// The seed of every random choice.
    pub seed: u64,
    /// Drive the scheduler for every refresh, idle or not (slow; for checking).
    pub exact: bool,
}

impl Scenario {
    /// The scenario for `instances`: 7 days in deploy/'s topology,
    /// one rotation due a day, clocks up to S apart, a rolling restart of the
    /// whole fleet every 6 h and a cold restart of all of it on day 6, a
    /// 10-minute store outage, 10 instances partitioned for 4 h across a
    /// rotation and a rolling restart, an emergency rotation, and traffic. P is 330 s so that the
    /// 10-minute outage stays within the 2P staleness bound.
    pub fn fleet_week(instances: usize) -> Self {
        let day = 86_400.0;
        let timing = Timing::new(
            Duration::from_secs(30),
            Duration::from_secs(60),
            Duration::from_secs(600),
        )
        .with_propagation(Duration::from_secs(330));
        Self {
            instances,
            days: 7.0,
            timing,
            topology: Topology::Rotator,
            rotation_period: day,
            rotator_every: 3600.0,
            rotator_first: 17.0 * 60.0,
            clock_skew: timing.max_skew.as_secs_f64(),
            ready_timeout: 10.0,
            crash_backoff: (10.0, 300.0),
            restart_every: Some(6.0 * 3600.0),
            restart_window: 600.0,
            restart_downtime: 1.0,
            cold_restart_at: Some(5.5 * day),
            // Clear of the rolling restarts (a server cannot start while the
            // store is down: see the controls).
            store_outage: Some((2.5 * day + 3.0 * 3600.0, 600.0)),
            // Across the third rotation (due about 3 days in), and across the
            // rolling restart at day 3: the cut-off instances restarted then
            // cannot start until it ends (they exit at ready_timeout).
            partition: Some((3.0 * day - 3600.0, 4.0 * 3600.0)),
            partition_size: instances.min(10),
            emergency_at: Some(4.5 * day),
            failing_rotators: 0,
            legacy_reclaim: false,
            rounds_per_second: 0.2,
            store: StoreKind::Gcs.profile(),
            kms: KmsKind::Aws.profile(),
            start_spread: 5.0,
            seed: 20_261_125,
            exact: false,
        }
    }

    /// Capacity planning (`stateseal simulate`): one day in deploy/'s
    /// topology with a cold start, one rotation and one rolling restart, on
    /// the given store and KMS, default timing.
    pub fn capacity(instances: usize, store: StoreKind, kms: KmsKind) -> Self {
        let timing = Timing::default();
        Self {
            instances,
            days: 1.0,
            timing,
            topology: Topology::Rotator,
            rotation_period: 12.0 * 3600.0,
            rotator_every: 3600.0,
            rotator_first: 17.0 * 60.0,
            clock_skew: timing.max_skew.as_secs_f64(),
            ready_timeout: 10.0,
            crash_backoff: (10.0, 300.0),
            restart_every: Some(18.0 * 3600.0),
            restart_window: 600.0,
            restart_downtime: 1.0,
            cold_restart_at: None,
            store_outage: None,
            partition: None,
            partition_size: 0,
            emergency_at: None,
            failing_rotators: 0,
            legacy_reclaim: false,
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
        let positive = |v: f64| v.is_finite() && v > 0.0;
        // NaN and the infinities fall outside any such range.
        let seconds_up_to = |v: f64, max: f64| (0.0..=max).contains(&v);
        if self.instances == 0 || self.instances > 1_000_000 {
            return bad("instances must be between 1 and 1,000,000");
        }
        if !(positive(self.days) && self.days <= 366.0) {
            return bad("days must be between 0 and 366");
        }
        if !(self.rotation_period.is_finite()
            && self.rotation_period
                > (self.timing.propagation + self.timing.retire_delay()).as_secs_f64())
        {
            return bad("rotation_period must be longer than one full rotation (2P + T + S)");
        }
        if !(self.rounds_per_second.is_finite() && self.rounds_per_second >= 0.0) {
            return bad("rounds_per_second must be zero or positive");
        }
        if !seconds_up_to(self.clock_skew, 86_400.0) {
            return bad("clock_skew must be between 0 and 86,400 seconds");
        }
        if !seconds_up_to(self.start_spread, 86_400.0) {
            return bad("start_spread must be between 0 and 86,400 seconds");
        }
        if !seconds_up_to(self.restart_downtime, 3_600.0) {
            return bad("restart_downtime must be between 0 and 3,600 seconds");
        }
        if !(positive(self.ready_timeout) && positive(self.rotator_every)) {
            return bad("ready_timeout and rotator_every must be positive");
        }
        if !(positive(self.crash_backoff.0) && self.crash_backoff.1 >= self.crash_backoff.0) {
            return bad("crash_backoff must be positive, its cap at least its first wait");
        }
        if self.kms.quota_per_s == 0 {
            return bad("the KMS quota must be at least 1 request per second");
        }
        if self.partition.is_some() && !(1..self.instances).contains(&self.partition_size) {
            return bad("a partition cuts off at least one instance and leaves one");
        }
        Ok(())
    }
}
