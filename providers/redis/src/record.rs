//! One record: a Lua script that reads the epoch and sets the record in the
//! same round trip, atomically.
//!
//! Keys: `<prefix>{<b>}:<key>` for a record and `<prefix>{<b>}:epoch` for the
//! epoch of its bucket, `<b>` the key's first two hex digits. The braces are
//! a hash tag: a record and its epoch share a slot, so on a cluster the
//! script runs on one shard, and 256 buckets spread the records over the
//! shards with an epoch beside each. A shard that loses its data loses its
//! epochs with it, and only its own states are refused.
//!
//! The epoch (no TTL) holds the time, on the verifier's clock, since which
//! its bucket's records are complete. A missing epoch means the records went
//! with it: the script puts a new one in place and refuses the state. A state
//! issued no later than the epoch plus the skew allowance is refused (a
//! state minted before the loss has `iat` at most the skew ahead of any
//! verifier's clock). Records expire after a TTL computed on the verifier's
//! clock (`PX`), so a server clock that runs ahead cannot drop them early.
//! Each presentation writes its own random value, so a retry whose first
//! reply was lost recognises its own write instead of reading it as a replay.

use std::sync::LazyLock;

use crate::connection::Connection;

/// KEYS[1] the epoch, KEYS[2] the record; ARGV[1] now (ms, the epoch if
/// missing), ARGV[2] the state's `iat` minus the skew allowance (ms),
/// ARGV[3] this presentation's value, ARGV[4] the record's TTL (ms).
const SCRIPT: &str = r"
local epoch = redis.call('GET', KEYS[1])
if not epoch then
  redis.call('SET', KEYS[1], ARGV[1])
  return 'lost'
end
if tonumber(ARGV[2]) <= tonumber(epoch) then
  return 'before'
end
if redis.call('SET', KEYS[2], ARGV[3], 'NX', 'PX', ARGV[4]) then
  return 'new'
end
if redis.call('GET', KEYS[2]) == ARGV[3] then
  return 'mine'
end
return 'used'
";

static RECORD: LazyLock<redis::Script> = LazyLock::new(|| redis::Script::new(SCRIPT));

/// Buckets (each with its epoch): every two-hex-digit prefix of a key.
const BUCKETS: usize = 256;

/// What the script answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// This presentation set the record.
    New,
    /// The record holds this presentation's value: an earlier try of this
    /// very call landed and its reply was lost.
    Mine,
    /// Another presentation set it: a replay.
    Used,
    /// The state was issued before its bucket's epoch.
    Before,
    /// The bucket had no epoch (its records were lost): one was put in place.
    Lost,
}

/// Where a fleet's records and epochs live.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    prefix: String,
}

impl Layout {
    pub(crate) fn new(prefix: String) -> Self {
        Self { prefix }
    }

    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The record's key for the replay key `key` (where `WAIT` goes on a cluster).
    pub(crate) fn record_key(&self, key: &str) -> String {
        format!("{}{{{}}}:{key}", self.prefix, bucket_of(key))
    }

    fn epoch_key(&self, bucket: &str) -> String {
        format!("{}{{{bucket}}}:epoch", self.prefix)
    }

    /// Sets each bucket's epoch to `now` where it has none.
    pub(crate) async fn ensure_epochs(
        &self,
        conn: &mut Connection,
        now: f64,
    ) -> redis::RedisResult<()> {
        let keys: Vec<String> = (0..BUCKETS)
            .map(|b| self.epoch_key(&format!("{b:02x}")))
            .collect();
        conn.set_absent(&keys, millis(now)).await
    }

    /// Runs the record script for the replay key `key`.
    pub(crate) async fn record(
        &self,
        conn: &mut Connection,
        key: &str,
        attempt: &Attempt,
    ) -> redis::RedisResult<Verdict> {
        let answer: String = RECORD
            .key(self.epoch_key(bucket_of(key)))
            .key(self.record_key(key))
            .arg(attempt.now_ms)
            .arg(attempt.floor_ms)
            .arg(&attempt.value)
            .arg(attempt.ttl_ms)
            .invoke_async(conn)
            .await?;
        match answer.as_str() {
            "new" => Ok(Verdict::New),
            "mine" => Ok(Verdict::Mine),
            "used" => Ok(Verdict::Used),
            "before" => Ok(Verdict::Before),
            "lost" => Ok(Verdict::Lost),
            _ => Err(redis::RedisError::from((
                redis::ErrorKind::Parse,
                "the record script gave an unknown answer",
            ))),
        }
    }
}

/// The arguments of one presentation's record, the same on each try.
pub(crate) struct Attempt {
    pub(crate) now_ms: i64,
    pub(crate) floor_ms: i64,
    pub(crate) value: String,
    pub(crate) ttl_ms: u64,
}

/// The bucket of a replay key (64 hex digits): its first two.
fn bucket_of(key: &str) -> &str {
    key.get(..2).unwrap_or("00")
}

/// Unix seconds as whole milliseconds, rounded down.
pub(crate) fn millis(seconds: f64) -> i64 {
    (seconds * 1000.0).floor() as i64
}

/// Whether an error means the connection is gone (make another and retry),
/// rather than an answer of the server.
pub(crate) fn is_connection_error(e: &redis::RedisError) -> bool {
    e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() || e.is_timeout()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_and_its_epoch_share_a_hash_tag() {
        let layout = Layout::new("stateseal:replay:ks_1:".to_owned());
        let key = "3fa0".repeat(16);
        assert_eq!(
            layout.record_key(&key),
            format!("stateseal:replay:ks_1:{{3f}}:{key}")
        );
        assert_eq!(
            layout.epoch_key(bucket_of(&key)),
            "stateseal:replay:ks_1:{3f}:epoch"
        );
        let buckets: std::collections::BTreeSet<String> =
            (0..BUCKETS).map(|b| format!("{b:02x}")).collect();
        for first in "0123456789abcdef".chars() {
            for second in "0123456789abcdef".chars() {
                assert!(buckets.contains(&format!("{first}{second}")));
            }
        }
        assert_eq!(millis(1.0015), 1001);
        assert_eq!(millis(-0.5), -500);
    }
}
