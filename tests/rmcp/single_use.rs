//! A fleet of three servers over real HTTP on loopback, sharing one key and
//! one real Redis server (Debian's, started on a loopback port and stopped
//! by PID): the single-use `transfer` verifies once fleet-wide, racing
//! presentations admit exactly one, and a Redis outage refuses single-use
//! states only, until Redis is back.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use stateseal::boundary::Boundary;
use stateseal::replay::ReplayStore;
use stateseal::rmcp_adapter::StateSealed;
use stateseal::{AesGcmCodec, Envelope, KeyRing, RingHandle, RingKey, Secret, TokenFormat};
use stateseal_redis::RedisReplayStore;
use stateseal_testkit::redis::Redis;

use crate::demo_confirming::Confirming;
use crate::http::call;

/// The frozen refusal every bad echo gets.
fn refused() -> Value {
    json!({"code": -32602, "message": "Invalid or expired requestState", "data": {"reason": "invalid_request_state"}})
}

/// Three servers: each its own envelope, boundary and Redis connection on
/// one shared ring, as three processes on one keyset would be.
async fn fleet(redis: &Redis) -> (Vec<String>, Vec<tokio::task::JoinHandle<()>>) {
    let key = RingKey::with_format(&Secret::generate().expect("rng"), TokenFormat::V2);
    let ring = Arc::new(RingHandle::new(
        KeyRing::from_keys(vec![Arc::new(key)]).expect("ring"),
    ));
    let (mut addrs, mut servers) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let envelope = Envelope::builder(Arc::new(AesGcmCodec::new(ring.clone())), Some("bank"))
            .build()
            .expect("envelope");
        let store: Arc<dyn ReplayStore> = Arc::new(
            RedisReplayStore::builder(&redis.url())
                .key_prefix("stateseal:replay:fleet:")
                .build()
                .expect("store"),
        );
        let boundary = Boundary::builder(Arc::new(envelope))
            .replay_store(store)
            .single_use("tools/call", "transfer")
            .build();
        let router = crate::bearer_auth::mcp_router(StateSealed::new(Confirming, boundary));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        addrs.push(listener.local_addr().expect("addr").to_string());
        servers.push(tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        }));
    }
    (addrs, servers)
}

/// One call, off the runtime's threads.
async fn on(addr: &str, params: Value) -> Value {
    let addr = addr.to_owned();
    tokio::task::spawn_blocking(move || call(&addr, "alice-token", params))
        .await
        .expect("join")
}

fn first(tool: &str) -> Value {
    match tool {
        "transfer" => json!({"name": "transfer", "arguments": {"amount": 5}}),
        _ => json!({"name": "deploy", "arguments": {"env": "prod"}}),
    }
}

fn second(tool: &str, state: &str) -> Value {
    let mut p = first(tool);
    p["requestState"] = json!(state);
    p["inputResponses"] = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
    p
}

/// A first round's sealed state.
async fn state_from(addr: &str, tool: &str) -> String {
    let answer = on(addr, first(tool)).await;
    answer["result"]["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("a sealed state: {answer}"))
        .to_owned()
}

fn done(answer: &Value) -> bool {
    answer["result"]["content"][0]["text"]
        .as_str()
        .is_some_and(|t| t.starts_with("transferred") || t.starts_with("deployed"))
}

fn dir(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "stateseal-single-use-{name}-{}",
        std::process::id()
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_use_state_verifies_once_across_the_fleet() {
    let redis = Redis::start(&dir("once"));
    let (addrs, servers) = fleet(&redis).await;
    let state = state_from(&addrs[0], "transfer").await;
    assert!(state.starts_with("v2."));
    let accepted = on(&addrs[1], second("transfer", &state)).await;
    assert!(done(&accepted), "{accepted}");
    for addr in &addrs {
        let replay = on(addr, second("transfer", &state)).await;
        assert_eq!(replay["error"], refused(), "a replay on {addr}");
    }
    // A multi-use state verifies on every instance, as often as it comes back.
    let deploy = state_from(&addrs[2], "deploy").await;
    for addr in addrs.iter().chain(&addrs) {
        assert!(done(&on(addr, second("deploy", &deploy)).await));
    }
    assert_eq!(redis.keys(), 1, "only the single-use state was recorded");
    servers.iter().for_each(|s| s.abort());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_presentations_on_three_instances_admit_exactly_one() {
    let redis = Redis::start(&dir("race"));
    let (addrs, servers) = fleet(&redis).await;
    for _ in 0..20 {
        let state = state_from(&addrs[0], "transfer").await;
        let racers: Vec<_> = addrs
            .iter()
            .map(|addr| {
                let (addr, p) = (addr.clone(), second("transfer", &state));
                std::thread::spawn(move || call(&addr, "alice-token", p))
            })
            .collect();
        let answers: Vec<Value> = racers
            .into_iter()
            .map(|r| r.join().expect("racer"))
            .collect();
        let accepted = answers.iter().filter(|a| done(a)).count();
        let refusals = answers.iter().filter(|a| a["error"] == refused()).count();
        assert_eq!((accepted, refusals), (1, 2), "{answers:?}");
    }
    servers.iter().for_each(|s| s.abort());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_outage_refuses_single_use_states_only_until_it_is_back() {
    let mut redis = Redis::start(&dir("outage"));
    let (addrs, servers) = fleet(&redis).await;
    let before = state_from(&addrs[0], "transfer").await;
    assert!(done(&on(&addrs[1], second("transfer", &before)).await));
    redis.stop();
    // Single-use: refused (fail closed). Minting needs no store.
    let during = state_from(&addrs[0], "transfer").await;
    assert_eq!(
        on(&addrs[1], second("transfer", &during)).await["error"],
        refused()
    );
    // Multi-use: unaffected.
    let deploy = state_from(&addrs[0], "deploy").await;
    assert!(done(&on(&addrs[2], second("deploy", &deploy)).await));
    redis.start_again();
    // The refused state was not recorded, so it still verifies once; each
    // instance's connection comes back by itself.
    let mut accepted = None;
    for _ in 0..30 {
        let answer = on(&addrs[1], second("transfer", &during)).await;
        if done(&answer) {
            accepted = Some(answer);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        accepted.is_some(),
        "single-use states verify again after the outage"
    );
    assert_eq!(
        on(&addrs[2], second("transfer", &during)).await["error"],
        refused()
    );
    servers.iter().for_each(|s| s.abort());
}
