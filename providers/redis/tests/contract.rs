//! The Redis replay store against a real Redis server (Debian's, started on
//! a loopback port per test and stopped by PID): the replay contract, an
//! outage and a server that never answers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use stateseal::Error;
use stateseal::replay::ReplayStore;
use stateseal_contract::replay::{self, States};
use stateseal_redis::RedisReplayStore;
use stateseal_testkit::redis::Redis;

fn dir(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("stateseal-redis-{name}-{}", std::process::id()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_keeps_the_replay_contract() {
    let redis = Redis::start(&dir("contract"));
    let store = RedisReplayStore::builder(&redis.url())
        .key_prefix("stateseal:contract:")
        .build()
        .expect("store");
    replay::run(Arc::new(store)).await;
    // Records expire by themselves: only the live ones are held.
    assert!(redis.keys() >= 23, "{} keys", redis.keys());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_refuses_records_until_the_server_is_back() {
    let mut redis = Redis::start(&dir("outage"));
    let store = RedisReplayStore::builder(&redis.url())
        .deadline(Duration::from_millis(500))
        .build()
        .expect("store");
    let states = States::new("bank");
    let once = states.record();
    assert_eq!(store.record(&once).await, Ok(true));
    redis.stop();
    let started = Instant::now();
    let err = store.record(&states.record()).await.unwrap_err();
    assert!(matches!(err, Error::ReplayStore { .. }), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "within the deadline"
    );
    assert!(err.to_string().contains(&redis.url()), "{err}");
    // Back (empty: nothing was persisted), and the same connection reconnects.
    redis.start_again();
    let mut recorded = None;
    for _ in 0..20 {
        match store.record(&states.record()).await {
            Ok(r) => {
                recorded = Some(r);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    assert_eq!(recorded, Some(true), "records land again after the outage");
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
    assert!(matches!(err, Error::ReplayStore { .. }), "{err}");
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
    assert!(matches!(err, Error::ReplayStore { .. }), "{err}");
}
