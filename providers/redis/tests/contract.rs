//! The Redis replay store against a real Redis server (Debian's, started on
//! a loopback port per test and stopped by PID): the replay contract, and
//! what goes wrong on a real deployment: a restart that empties it, a flush,
//! a connection that dies, a reply that is lost, an eviction policy that
//! drops records, a replica that falls behind, an outage, a silent server.

use std::sync::Arc;
use std::time::{Duration, Instant};

use stateseal::replay::{Recorded, ReplayStore};
use stateseal::{Clock, Error, ManualClock, ProviderError, SystemClock};
use stateseal_contract::replay::{self, SKEW, States};
use stateseal_redis::RedisReplayStore;
use stateseal_testkit::lost_reply;
use stateseal_testkit::redis::Redis;

fn dir(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("stateseal-redis-{name}-{}", std::process::id()))
}

/// A store on `url` whose clock the test moves, made (and prepared) now.
async fn on_manual_clock(url: &str) -> (RedisReplayStore, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(SystemClock.now()));
    let store = RedisReplayStore::builder(url)
        .deadline(Duration::from_millis(500))
        .clock(clock.clone())
        .build()
        .expect("store");
    store.prepare().await.expect("prepared");
    (store, clock)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_keeps_the_replay_contract() {
    let redis = Redis::start(&dir("contract"));
    let store = RedisReplayStore::builder(&redis.url())
        .key_prefix("stateseal:contract:")
        .build()
        .expect("store");
    replay::run(Arc::new(store)).await;
    // 256 epochs (no TTL) and the live records (expired ones are gone by themselves).
    assert!(redis.keys() >= 256 + 23, "{} keys", redis.keys());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_that_empties_the_store_refuses_spent_states_and_costs_no_fresh_round() {
    let mut redis = Redis::start(&dir("restart"));
    let (store, clock) = on_manual_clock(&redis.url()).await;
    let states = States::new("bank");
    let spent = states.record();
    assert_eq!(store.record(&spent).await, Ok(Recorded::First));
    assert_eq!(store.record(&spent).await, Ok(Recorded::Replay));
    // Killed and started again with nothing persisted: the record is gone.
    redis.stop();
    redis.start_again();
    assert_eq!(redis.keys(), 0);
    clock.advance(Duration::from_secs(10));
    // The first record after the restart reconnects within its deadline (no
    // retry by the test), puts new epochs in place and refuses the spent state.
    assert_eq!(
        store.record(&spent).await,
        Ok(Recorded::BeforeEpoch),
        "a spent state is not accepted again after the store lost its record"
    );
    assert_eq!(store.record(&spent).await, Ok(Recorded::BeforeEpoch));
    // A round issued after the new epoch completes, once.
    let fresh = states.record_at(clock.now() + SKEW + Duration::from_secs(1));
    assert_eq!(store.record(&fresh).await, Ok(Recorded::First));
    assert_eq!(store.record(&fresh).await, Ok(Recorded::Replay));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flush_under_a_live_connection_is_noticed_at_the_next_record() {
    let redis = Redis::start(&dir("flush"));
    let (store, clock) = on_manual_clock(&redis.url()).await;
    let states = States::new("bank");
    let spent = states.record();
    assert_eq!(store.record(&spent).await, Ok(Recorded::First));
    assert!(redis.run("FLUSHALL").starts_with("+OK"));
    clock.advance(Duration::from_secs(10));
    // Same connection, no reconnect: the script finds its bucket's epoch gone.
    assert_eq!(store.record(&spent).await, Ok(Recorded::BeforeEpoch));
    assert_eq!(
        redis.keys(),
        256,
        "every bucket's epoch put back at once, no record"
    );
    // So a round issued after the new epoch completes, in whichever bucket.
    for _ in 0..5 {
        let fresh = states.record_at(clock.now() + SKEW + Duration::from_secs(1));
        assert_eq!(store.record(&fresh).await, Ok(Recorded::First));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_the_server_closed_is_made_again_within_the_deadline() {
    let redis = Redis::start(&dir("reconnect"));
    let (store, _clock) = on_manual_clock(&redis.url()).await;
    let states = States::new("bank");
    assert_eq!(store.record(&states.record()).await, Ok(Recorded::First));
    // The server drops every client (as a restart with persistence, a
    // failover or a load balancer's idle cut would): no round is lost.
    let killed = redis.run("CLIENT KILL TYPE normal");
    assert!(killed.starts_with(":1"), "{killed}");
    let started = Instant::now();
    assert_eq!(store.record(&states.record()).await, Ok(Recorded::First));
    assert!(started.elapsed() < Duration::from_millis(500));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_whose_first_reply_was_lost_recognises_its_own_write() {
    let redis = Redis::start(&dir("lost-reply"));
    let relay = lost_reply::Relay::start(redis.port).await;
    let (store, _clock) = on_manual_clock(&relay.url()).await;
    let states = States::new("bank");
    // Loads the script: from here a record is one EVALSHA.
    assert_eq!(store.record(&states.record()).await, Ok(Recorded::First));
    let once = states.record();
    relay.eat_next_script_reply();
    assert_eq!(
        store.record(&once).await,
        Ok(Recorded::First),
        "the write landed, its reply was lost, the retry is the same presentation"
    );
    assert_eq!(relay.replies_eaten(), 1, "the reply really was lost");
    assert_eq!(
        store.record(&once).await,
        Ok(Recorded::Replay),
        "another presentation is a replay"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_eviction_policy_that_can_drop_records_is_refused_with_its_reason() {
    let redis = Redis::start_with(
        &dir("evict"),
        &["--maxmemory", "4mb", "--maxmemory-policy", "volatile-lru"],
    );
    let (url, clock) = (redis.url(), Arc::new(ManualClock::new(SystemClock.now())));
    let store = RedisReplayStore::builder(&url)
        .clock(clock.clone())
        .build()
        .expect("store");
    let err = store.prepare().await.unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, Error::Provider(ProviderError::ReplayStore { .. })),
        "{text}"
    );
    assert!(text.contains("volatile-lru"), "{text}");
    assert!(text.contains("set maxmemory-policy noeviction"), "{text}");
    // Filled with keys that carry a TTL, as records do: the server evicts them.
    for i in 0..3000 {
        redis.run(&format!("SET filler:{i} {} PX 600000", "x".repeat(2048)));
    }
    assert!(redis.keys() < 3000, "the server evicted keys with a TTL");
    let states = States::new("bank");
    let before = redis.keys();
    let err = store.record(&states.record()).await.unwrap_err();
    assert!(err.to_string().contains("volatile-lru"), "{err}");
    assert!(redis.keys() <= before, "nothing recorded, no epoch written");
    // Fixed on the live server: seen at the next check, records land again.
    assert!(
        redis
            .run("CONFIG SET maxmemory-policy noeviction")
            .starts_with("+OK")
    );
    assert!(redis.run("FLUSHALL").starts_with("+OK"));
    clock.advance(Duration::from_secs(6));
    let fresh = states.record_at(clock.now() + SKEW + Duration::from_secs(1));
    assert_eq!(store.record(&fresh).await, Ok(Recorded::First));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_wait_a_record_counts_only_once_a_replica_has_it() {
    let primary = Redis::start(&dir("wait-primary"));
    let port = primary.port.to_string();
    let mut replica = Redis::start_with(&dir("wait-replica"), &["--replicaof", "127.0.0.1", &port]);
    let synced = Instant::now();
    while !replica
        .run("INFO replication")
        .contains("master_link_status:up")
    {
        assert!(
            synced.elapsed() < Duration::from_secs(20),
            "the replica never synced"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A deadline that leaves the server's WAIT timeout (half of what is
    // left, at most half the deadline) room on a loaded host.
    let store = RedisReplayStore::builder(&primary.url())
        .deadline(Duration::from_secs(2))
        .wait_replicas(1)
        .build()
        .expect("store");
    store.prepare().await.expect("prepared");
    let states = States::new("bank");
    let once = states.record();
    assert_eq!(store.record(&once).await, Ok(Recorded::First));
    assert_eq!(store.record(&once).await, Ok(Recorded::Replay));
    replica.stop();
    let started = Instant::now();
    let err = store.record(&states.record()).await.unwrap_err();
    assert!(err.to_string().contains("reached 0 of 1 replicas"), "{err}");
    assert!(
        started.elapsed() < Duration::from_millis(2500),
        "within the deadline"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_refuses_records_until_the_server_is_back() {
    let mut redis = Redis::start(&dir("outage"));
    let (store, clock) = on_manual_clock(&redis.url()).await;
    let states = States::new("bank");
    assert_eq!(store.record(&states.record()).await, Ok(Recorded::First));
    redis.stop();
    let started = Instant::now();
    let err = store.record(&states.record()).await.unwrap_err();
    assert!(
        matches!(err, Error::Provider(ProviderError::ReplayStore { .. })),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "within the deadline"
    );
    assert!(err.to_string().contains(&redis.url()), "{err}");
    // Back (empty: nothing was persisted): the next record reconnects.
    redis.start_again();
    clock.advance(Duration::from_secs(10));
    let fresh = states.record_at(clock.now() + SKEW + Duration::from_secs(1));
    assert_eq!(store.record(&fresh).await, Ok(Recorded::First));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_fails_within_the_deadline() {
    // Accepts connections and says nothing.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("listener");
    let url = format!(
        "redis://127.0.0.1:{}/0",
        silent.local_addr().expect("addr").port()
    );
    let store = RedisReplayStore::builder(&url)
        .deadline(Duration::from_millis(200))
        .build()
        .expect("store");
    let started = Instant::now();
    let err = store
        .record(&States::new("bank").record())
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert!(err.to_string().contains("replay store"), "{err}");
    assert!(
        took >= Duration::from_millis(200) && took < Duration::from_secs(1),
        "{took:?}"
    );
}

#[tokio::test]
async fn a_host_that_does_not_resolve_fails_closed() {
    let store = RedisReplayStore::builder("redis://replay.invalid:6379/0")
        .build()
        .expect("store");
    let err = store
        .record(&States::new("bank").record())
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Provider(ProviderError::ReplayStore { .. })),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rediss_keeps_the_contract_over_tls_and_refuses_an_untrusted_server() {
    let redis = Redis::start_tls(&dir("tls"));
    let (url, ca) = redis.tls_url();
    let store = RedisReplayStore::builder(&url)
        .ca_certificate_pem(ca)
        .build()
        .expect("store");
    replay::run(Arc::new(store)).await;
    // The same server without its CA: the Web PKI roots do not vouch for it.
    let untrusted = RedisReplayStore::builder(&url).build().expect("store");
    let err = untrusted
        .record(&States::new("bank").record())
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Provider(ProviderError::ReplayStore { .. })),
        "{err}"
    );
}
