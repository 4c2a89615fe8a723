//! The Redis replay store on a real Redis Cluster (3 primaries, 3 replicas,
//! made by `redis-cli --cluster create` on loopback and stopped by PID): the
//! replay contract across shards, presentations racing on three stores (three
//! servers of a fleet), an eviction policy refused on one shard, and a primary
//! killed mid-run: with `wait_replicas=1` no spent state is accepted after
//! the failover, and fresh rounds complete once it is over.

use std::sync::Arc;
use std::time::{Duration, Instant};

use stateseal::replay::{Recorded, ReplayStore};
use stateseal::{Error, ProviderError};
use stateseal_contract::replay::{self, States};
use stateseal_redis::RedisReplayStore;
use stateseal_testkit::redis_cluster::RedisCluster;

fn dir(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("stateseal-cluster-{name}-{}", std::process::id()))
}

fn store(url: &str) -> RedisReplayStore {
    RedisReplayStore::builder(url)
        .key_prefix("stateseal:replay:cluster:")
        .deadline(Duration::from_millis(1000))
        .build()
        .expect("store")
}

/// Three primaries again, every running node serving every slot.
fn failed_over(c: &RedisCluster) -> bool {
    c.primaries().len() == 3
        && c.nodes
            .iter()
            .filter(|n| n.is_running())
            .all(|n| n.run("CLUSTER INFO").contains("cluster_state:ok"))
}

/// One cluster for the tests that share it (each cluster is six processes).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn single_use_holds_on_a_cluster_across_shards_and_through_a_failover() {
    let mut cluster = RedisCluster::start(&dir("main"));
    let url = cluster.url();

    // The contract, on keys spread over the three shards.
    replay::run(Arc::new(store(&url))).await;
    let per_shard: Vec<u64> = cluster
        .primaries()
        .iter()
        .map(|&i| cluster.nodes[i].keys())
        .collect();
    assert!(
        per_shard.iter().all(|&k| k > 20),
        "records and epochs on every shard: {per_shard:?}"
    );

    // Three servers' stores, 20 states, each presented at once on all three: one wins.
    let fleet: Vec<Arc<RedisReplayStore>> = (0..3).map(|_| Arc::new(store(&url))).collect();
    for s in &fleet {
        s.prepare().await.expect("prepared");
    }
    let states = States::new("bank");
    for _ in 0..20 {
        let once = states.record();
        let racers: Vec<_> = fleet
            .iter()
            .chain(&fleet)
            .map(|s| {
                let (s, once) = (Arc::clone(s), once.clone());
                tokio::spawn(async move { s.record(&once).await })
            })
            .collect();
        let mut first = 0;
        for r in racers {
            first += usize::from(r.await.expect("racer") == Ok(Recorded::First));
        }
        assert_eq!(
            first, 1,
            "exactly one of 6 racing presentations on 3 stores"
        );
    }

    // One shard's eviction policy changed: refused, naming it.
    let primary = cluster.primaries()[0];
    assert!(
        cluster.nodes[primary]
            .run("CONFIG SET maxmemory-policy volatile-ttl")
            .starts_with("+OK")
    );
    let err = store(&url).prepare().await.unwrap_err();
    assert!(err.to_string().contains("volatile-ttl"), "{err}");
    assert!(
        cluster.nodes[primary]
            .run("CONFIG SET maxmemory-policy noeviction")
            .starts_with("+OK")
    );

    // A primary killed mid-run, with WAIT for one replica: every acknowledged
    // record survives the failover, so no spent state is accepted again.
    let waiting = RedisReplayStore::builder(&format!("{url}?wait_replicas=1"))
        .key_prefix("stateseal:replay:cluster:")
        .deadline(Duration::from_millis(1000))
        .build()
        .expect("store");
    waiting.prepare().await.expect("prepared");
    let mut spent = Vec::new();
    for _ in 0..300 {
        let once = states.record();
        if waiting.record(&once).await == Ok(Recorded::First) {
            spent.push(once);
        }
    }
    assert_eq!(spent.len(), 300, "every record acknowledged by a replica");
    let victim = cluster.primaries()[1];
    cluster.nodes[victim].stop();
    let killed = Instant::now();
    cluster.wait_for("failed over", failed_over);
    let failover = killed.elapsed();
    let mut refused = 0;
    for once in &spent {
        match waiting.record(once).await {
            Ok(Recorded::Replay) => refused += 1,
            Ok(other) => panic!("a spent state after the failover: {other:?}"),
            // The client still learning the new primary: refused, which is fine.
            Err(Error::Provider(ProviderError::ReplayStore { .. })) => refused += 1,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(refused, spent.len());
    // Fresh rounds on the new topology: without WAIT every one is recorded
    // (the promoted replica has the epochs, replicated long ago); with it,
    // those of the shard that has no replica left are refused (fail closed).
    let plain = store(&url);
    plain.prepare().await.expect("prepared");
    for _ in 0..30 {
        assert_eq!(plain.record(&states.record()).await, Ok(Recorded::First));
    }
    let mut waited = (0, 0);
    for _ in 0..30 {
        match waiting.record(&states.record()).await {
            Ok(Recorded::First) => waited.0 += 1,
            Err(e) => {
                assert!(e.to_string().contains("replicas"), "{e}");
                waited.1 += 1;
            }
            Ok(other) => panic!("{other:?}"),
        }
    }
    assert!(waited.0 > 0 && waited.1 > 0, "{waited:?}");

    // Measured, without WAIT: records written just before a primary with a
    // replica dies, and how many of them the promoted replica lacks (each a
    // spent state that would verify again).
    let victim = *cluster
        .primaries()
        .iter()
        .find(|&&i| {
            cluster.nodes[i]
                .info("replication")
                .contains("connected_slaves:1")
        })
        .expect("a primary with a replica");
    let burst: Vec<_> = (0..2000).map(|_| states.record()).collect();
    let mut recorded = Vec::new();
    for once in &burst {
        if plain.record(once).await == Ok(Recorded::First) {
            recorded.push(once);
        }
    }
    cluster.nodes[victim].stop();
    cluster.wait_for("failed over again", failed_over);
    let mut again = 0;
    for once in &recorded {
        if plain.record(once).await == Ok(Recorded::First) {
            again += 1;
        }
    }
    assert!(again <= recorded.len());
    println!(
        "first failover took {:.1} s; {refused} spent states refused after it with WAIT; \
         {} of 30 fresh states recorded with WAIT, {} refused (no replica left on one shard); \
         without WAIT, {again} of {} records made just before the second kill were lost",
        failover.as_secs_f64(),
        waited.0,
        waited.1,
        recorded.len()
    );
}
