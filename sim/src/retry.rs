//! How stateseal's clients for each store and KMS retry a throttled call
//! before stateseal sees an error: the models of both services draw their
//! waits from here.

/// A client's retry rule for throttling answers (429, 503 SlowDown,
/// ThrottlingException, RESOURCE_EXHAUSTED).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryPolicy {
    /// The AWS SDK's standard mode as stateseal-aws-kms configures it: 3
    /// attempts; before retry n a wait drawn from [0, min(1 s · 2^(n−1), 20 s)].
    AwsStandard,
    /// The `object_store` crate (the S3 and GCS stores): 3 attempts; the
    /// first retry waits 100 ms, each later one a draw from [100 ms, 2× the
    /// last wait], at most 2 s.
    ObjectStore,
    /// Cloud KMS through google-cloud-gax with `Aip194Strict`: only
    /// `UNAVAILABLE` is retried, so a quota's `RESOURCE_EXHAUSTED` comes back at once.
    NotOnQuota,
    /// vaultrs (the Vault store and transit): no retries.
    Never,
}

impl RetryPolicy {
    /// Attempts in all, the first included.
    pub fn attempts(self) -> u32 {
        match self {
            Self::AwsStandard | Self::ObjectStore => 3,
            Self::NotOnQuota | Self::Never => 1,
        }
    }

    /// The wait before retry `n` (from 1) after a wait of `last` (0 before
    /// the first retry), with `unit` a uniform draw from [0, 1).
    pub fn wait(self, n: u32, last: f64, unit: f64) -> f64 {
        match self {
            Self::AwsStandard => unit * 2f64.powi(n.saturating_sub(1) as i32).min(20.0),
            Self::ObjectStore if n <= 1 => 0.1,
            Self::ObjectStore => (0.1 + unit * (2.0 * last - 0.1).max(0.0)).min(2.0),
            Self::NotOnQuota | Self::Never => 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_follow_the_clients() {
        assert_eq!(RetryPolicy::AwsStandard.attempts(), 3);
        assert!(RetryPolicy::AwsStandard.wait(2, 0.0, 0.999) < 2.0);
        assert_eq!(RetryPolicy::AwsStandard.wait(9, 0.0, 0.5), 10.0);
        assert_eq!(RetryPolicy::ObjectStore.wait(1, 0.0, 0.7), 0.1);
        let second = RetryPolicy::ObjectStore.wait(2, 0.1, 0.999);
        assert!((0.1..=0.2).contains(&second), "{second}");
        assert_eq!(RetryPolicy::ObjectStore.wait(5, 3.0, 0.9), 2.0);
        assert_eq!(RetryPolicy::NotOnQuota.attempts(), 1);
    }
}
