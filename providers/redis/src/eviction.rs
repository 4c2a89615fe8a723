//! Whether a server's eviction policy can drop records while keeping the
//! epoch, read from `INFO memory` (managed Redis and Valkey block `CONFIG`).
//!
//! Records carry a TTL and the epoch does not, so every `volatile-*` policy
//! evicts records and never the epoch: spent states would verify again with
//! nothing to show for it. The `allkeys-*` policies may evict a record and
//! keep the epoch just as well. Only `noeviction` keeps every record (a full
//! server then refuses writes, and the state is refused: fail closed).

/// The one policy that never drops a record.
pub(crate) const SAFE_POLICY: &str = "noeviction";

/// What `INFO memory` says of eviction: `Ok(())` for `noeviction`, else why
/// the store refuses to record (naming the policy and the fix).
pub(crate) fn judge(info: &str) -> Result<(), String> {
    let policy = info.lines().find_map(|line| {
        line.trim_end()
            .strip_prefix("maxmemory_policy:")
            .map(str::trim)
    });
    match policy {
        Some(SAFE_POLICY) => Ok(()),
        Some(other) => Err(format!(
            "maxmemory-policy is {other}, which can evict single-use records (their TTL makes them candidates) while keeping the store's epoch, so a spent state would verify again: set maxmemory-policy {SAFE_POLICY} (on managed Redis, in the parameter group)"
        )),
        None => Err(
            "INFO memory did not give maxmemory_policy, so the store cannot tell whether records may be evicted: use a server that reports it"
                .to_owned(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_noeviction_is_accepted() {
        let info = |policy: &str| {
            format!(
                "# Memory\r\nused_memory:1000\r\nmaxmemory:10485760\r\nmaxmemory_policy:{policy}\r\nallocator_frag_ratio:1.0\r\n"
            )
        };
        assert_eq!(judge(&info("noeviction")), Ok(()));
        for bad in [
            "volatile-lru",
            "volatile-lfu",
            "volatile-ttl",
            "volatile-random",
            "allkeys-lru",
            "allkeys-lfu",
            "allkeys-random",
        ] {
            let err = judge(&info(bad)).unwrap_err();
            assert!(err.contains(bad), "{err}");
            assert!(err.contains("set maxmemory-policy noeviction"), "{err}");
        }
        let err = judge("# Memory\r\nused_memory:1\r\n").unwrap_err();
        assert!(err.contains("maxmemory_policy"), "{err}");
        // A value that only starts like the safe one is not it.
        assert!(judge(&info("noeviction-ish")).is_err());
    }
}
