//! What a run measured, and the table operators read.

use serde_json::{Value, json};

/// One rotation the run saw land in the store.
#[derive(Debug, Clone, PartialEq)]
pub struct RotationRecord {
    /// The new key's entry id.
    pub entry: String,
    /// The generation that added the new key.
    pub generation: u64,
    /// When it was written (seconds from the start).
    pub written_at: f64,
    /// An operator's forced rotation (else a server's, by age).
    pub emergency: bool,
    /// For a server's rotation: when the primary it replaced fell due.
    pub due_at: Option<f64>,
    /// Seconds from the write until every running instance held it.
    pub adopted_after: Option<f64>,
    /// KMS calls it cost: data keys generated for it, and unwraps of the new
    /// key until the fleet had adopted it.
    pub kms_calls: u64,
    /// Instances restarted between its write and its adoption (each new
    /// process unwraps the new key too: a restart's cost, not the rotation's).
    pub restarts_while_adopting: u64,
}

/// The run's figures. Each that can go wrong has a count here, and the
/// tests hold each to its bound.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Report {
    /// Instances.
    pub instances: usize,
    /// Simulated seconds.
    pub span: f64,
    /// Who wrote the keyset: `rotator` (deploy/'s job) or `servers`.
    pub topology: &'static str,
    /// The largest difference between two of the fleet's clocks.
    pub clock_skew: f64,
    /// Every rotation, in order.
    pub rotations: Vec<RotationRecord>,
    /// The longest a due rotation waited for its write (one still pending
    /// at the end included): a frozen rotation shows here.
    pub rotation_wait_max: f64,
    /// Rounds sealed and verified on another instance.
    pub rounds: u64,
    /// Valid rounds whose state another instance rejected.
    pub rejected_rounds: u64,
    /// Rounds a ready instance could not start (it refused to seal).
    pub refused_to_start: u64,
    /// Store reads: the busiest second.
    pub reads_peak: u32,
    /// Mean store reads per second.
    pub reads_mean: f64,
    /// Reads that returned the document.
    pub full_reads: u64,
    /// Conditional reads answered "unchanged".
    pub unchanged_reads: u64,
    /// Reads the store refused (503 SlowDown / 429), each client retry counted.
    pub reads_throttled: u64,
    /// Reads and landed writes of the `.newest` copy beside the document
    /// (another object: it shares no write rate limit with the document).
    pub newest_copy: (u64, u64),
    /// Store writes (the document): busiest second.
    pub writes_peak: u32,
    /// Mean store writes per second.
    pub writes_mean: f64,
    /// Writes that landed.
    pub writes: u64,
    /// Writes refused by the object's rate limit, each client retry counted.
    pub writes_throttled: u64,
    /// Writes that lost a compare-and-swap.
    pub writes_conflicted: u64,
    /// KMS requests admitted.
    pub kms_calls: u64,
    /// The busiest second's KMS requests.
    pub kms_peak_per_s: u32,
    /// The quota per second.
    pub kms_quota_per_s: u64,
    /// KMS requests refused by the quota, each client retry counted.
    pub kms_throttled: u64,
    /// Generate-data-key calls denied (the failing rotators').
    pub kms_denied: u64,
    /// Seconds from a cold start of the whole fleet until every instance
    /// was ready, the start spread included (the slowest cold start;
    /// infinite if one never was).
    pub cold_start_s: f64,
    /// Instances of a cold start that were not ready within ready_timeout
    /// of their own start (those that exited first included, and those never ready).
    pub cold_start_late: usize,
    /// The servers' ready_timeout.
    pub ready_timeout: f64,
    /// Server processes that exited at ready_timeout.
    pub startup_exits: u64,
    /// Instances that had a process exit at ready_timeout.
    pub instances_past_ready_timeout: usize,
    /// The rotator job's runs, and those that failed.
    pub rotator_runs: (u64, u64),
    /// States the partitioned instances sealed, and how many under a key the
    /// fleet had retired.
    pub partitioned_sealed: (u64, u64),
    /// States any instance sealed under a key the fleet had retired.
    pub sealed_with_retired: u64,
    /// Refreshes that called the scheduler, and idle ones counted without it.
    pub refreshes: (u64, u64),
}

impl Report {
    /// The slowest adoption of a rotation, in seconds.
    pub fn adoption_s(&self) -> f64 {
        self.rotations
            .iter()
            .filter_map(|r| r.adopted_after)
            .fold(0.0, f64::max)
    }

    /// The most KMS calls one rotation cost.
    pub fn kms_per_rotation(&self) -> u64 {
        self.rotations
            .iter()
            .map(|r| r.kms_calls)
            .max()
            .unwrap_or(0)
    }

    /// Document writes per rotation (claims and rotations; renewals too).
    pub fn writes_per_rotation(&self) -> f64 {
        self.writes as f64 / self.rotations.len().max(1) as f64
    }

    /// Everything, as JSON.
    pub fn to_json(&self) -> Value {
        let finite = |v: f64| if v.is_finite() { json!(v) } else { Value::Null };
        json!({
            "instances": self.instances,
            "span_s": self.span,
            "topology": self.topology,
            "clock_skew_s": self.clock_skew,
            "rotations": self.rotations.iter().map(|r| json!({
                "generation": r.generation, "written_at": r.written_at, "emergency": r.emergency,
                "due_at": r.due_at, "adopted_after_s": r.adopted_after, "kms_calls": r.kms_calls,
                "restarts_while_adopting": r.restarts_while_adopting,
            })).collect::<Vec<_>>(),
            "rotation_wait_max_s": self.rotation_wait_max,
            "rounds": self.rounds, "rejected_rounds": self.rejected_rounds,
            "refused_to_start": self.refused_to_start,
            "store_reads": {"peak_per_s": self.reads_peak, "mean_per_s": self.reads_mean,
                "full": self.full_reads, "unchanged": self.unchanged_reads,
                "throttled": self.reads_throttled},
            "newest_copy": {"reads": self.newest_copy.0, "writes": self.newest_copy.1},
            "store_writes": {"peak_per_s": self.writes_peak, "mean_per_s": self.writes_mean,
                "landed": self.writes, "throttled": self.writes_throttled,
                "conflicted": self.writes_conflicted, "per_rotation": self.writes_per_rotation()},
            "kms": {"calls": self.kms_calls, "peak_per_s": self.kms_peak_per_s,
                "quota_per_s": self.kms_quota_per_s, "throttled": self.kms_throttled,
                "denied": self.kms_denied, "per_rotation_max": self.kms_per_rotation()},
            "adoption_s_max": self.adoption_s(),
            "cold_start_s": finite(self.cold_start_s),
            "ready_timeout_s": self.ready_timeout,
            "cold_start_late": self.cold_start_late,
            "cold_start_within_ready_timeout": self.cold_start_late == 0,
            "startup_exits": self.startup_exits,
            "instances_past_ready_timeout": self.instances_past_ready_timeout,
            "rotator": {"runs": self.rotator_runs.0, "failed": self.rotator_runs.1},
            "partitioned": {"sealed": self.partitioned_sealed.0, "sealed_with_retired_key": self.partitioned_sealed.1},
            "sealed_with_retired_key": self.sealed_with_retired,
            "refreshes": {"driven": self.refreshes.0, "idle": self.refreshes.1},
        })
    }
}

/// The capacity table: one row per report.
pub fn table(reports: &[Report]) -> String {
    let mut out = String::from(
        "| instances | store reads/s peak | mean | store writes/s peak | mean per hour | KMS calls per rotation | KMS peak/s | adoption (s) | cold start (s) | exits at ready_timeout | KMS throttled | writes throttled/conflicted | rejected rounds |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in reports {
        out.push_str(&format!(
            "| {} | {} | {:.1} | {} | {:.2} | {} | {} | {:.0} | {:.1} | {} | {} | {}/{} | {} |\n",
            r.instances,
            r.reads_peak,
            r.reads_mean,
            r.writes_peak,
            r.writes_mean * 3600.0,
            r.kms_per_rotation(),
            r.kms_peak_per_s,
            r.adoption_s(),
            r.cold_start_s,
            r.startup_exits,
            r.kms_throttled,
            r.writes_throttled,
            r.writes_conflicted,
            r.rejected_rounds,
        ));
    }
    out
}
