//! A fleet of three servers over real HTTP on loopback, sharing one key and
//! one real Redis server (Debian's, started on a loopback port and stopped
//! by PID): the single-use `transfer` verifies once fleet-wide, racing
//! presentations admit exactly one, a state minted by an instance without
//! the setting is refused by those with it, and a Redis outage refuses
//! single-use states only; a Redis that comes back empty refuses the states
//! issued before (spent or not, its records are gone) and no fresh one.
//!
//! The fleet's envelopes and stores share one manual clock, moved by the
//! tests: the stores' epoch is set when they connect, and a state issued
//! within the skew allowance (1 s here) after it is refused.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use stateseal::boundary::Boundary;
use stateseal::replay::ReplayStore;
use stateseal::rmcp_adapter::StateSealed;
use stateseal::{
    Clock, Envelope, KeyRing, ManualClock, RingHandle, RingKey, Secret, SystemClock, TokenFormat,
};
use stateseal_redis::RedisReplayStore;
use stateseal_testkit::redis::Redis;

use crate::demo_confirming::Confirming;
use crate::http::call;

/// The frozen refusal every bad echo gets.
fn refused() -> Value {
    json!({"code": -32602, "message": "Invalid or expired requestState", "data": {"reason": "invalid_request_state"}})
}

/// The servers of a fleet, and the clock they run on.
struct Fleet {
    /// Three servers treating `transfer` as single-use.
    addrs: Vec<String>,
    /// One more on the same key without the setting (as before a rollout).
    lax: String,
    clock: Arc<ManualClock>,
    servers: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Fleet {
    fn drop(&mut self) {
        self.servers.iter().for_each(|s| s.abort());
    }
}

/// Three servers: each its own envelope, boundary and Redis connection on
/// one shared ring, as three processes on one keyset would be; their stores
/// connected (epoch set), then the clock moved past the skew allowance.
async fn fleet(redis: &Redis) -> Fleet {
    let key = RingKey::with_format(&Secret::generate().expect("rng"), TokenFormat::V2);
    let ring = Arc::new(RingHandle::new(
        KeyRing::from_keys(vec![Arc::new(key)]).expect("ring"),
    ));
    let clock = Arc::new(ManualClock::new(SystemClock.now()));
    let (mut addrs, mut servers) = (Vec::new(), Vec::new());
    for strict in [true, true, true, false] {
        let envelope = Envelope::builder(ring.clone(), Some("bank"))
            .max_skew(Duration::from_secs(1))
            .clock(clock.clone())
            .build()
            .expect("envelope");
        let mut boundary = Boundary::builder(Arc::new(envelope));
        if strict {
            let store: Arc<dyn ReplayStore> = Arc::new(
                RedisReplayStore::builder(&redis.url())
                    .key_prefix("stateseal:replay:fleet:")
                    .clock(clock.clone())
                    .build()
                    .expect("store"),
            );
            boundary = boundary
                .replay_store(store)
                .single_use("tools/call", "transfer");
        }
        let boundary = boundary.build();
        boundary.prepare_replay_store().await;
        assert!(
            !boundary.replay_store_failing(),
            "{:?}",
            boundary.replay_store_problem()
        );
        let router = crate::bearer_auth::mcp_router(StateSealed::new(Confirming, boundary));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        addrs.push(listener.local_addr().expect("addr").to_string());
        servers.push(tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        }));
    }
    clock.advance(Duration::from_secs(2));
    let lax = addrs.pop().expect("four servers");
    Fleet {
        addrs,
        lax,
        clock,
        servers,
    }
}

/// One call, off the runtime's threads.
async fn on(addr: &str, params: Value) -> Value {
    let addr = addr.to_owned();
    tokio::task::spawn_blocking(move || call(&addr, "alice-token", params))
        .await
        .expect("join")
}

pub(crate) fn first(tool: &str) -> Value {
    match tool {
        "transfer" => json!({"name": "transfer", "arguments": {"amount": 5}}),
        _ => json!({"name": "deploy", "arguments": {"env": "prod"}}),
    }
}

pub(crate) fn second(tool: &str, state: &str) -> Value {
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

pub(crate) fn done(answer: &Value) -> bool {
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
    let fleet = fleet(&redis).await;
    let addrs = &fleet.addrs;
    let epochs = redis.keys();
    assert_eq!(epochs, 256, "each bucket's epoch, set at connect");
    let state = state_from(&addrs[0], "transfer").await;
    assert!(state.starts_with("v2."));
    let accepted = on(&addrs[1], second("transfer", &state)).await;
    assert!(done(&accepted), "{accepted}");
    for addr in addrs {
        let replay = on(addr, second("transfer", &state)).await;
        assert_eq!(replay["error"], refused(), "a replay on {addr}");
    }
    // A multi-use state verifies on every instance, as often as it comes back.
    let deploy = state_from(&addrs[2], "deploy").await;
    for addr in addrs.iter().chain(addrs) {
        assert!(done(&on(addr, second("deploy", &deploy)).await));
    }
    assert_eq!(
        redis.keys(),
        epochs + 1,
        "only the single-use state was recorded"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_minted_without_the_claim_is_refused_on_every_instance() {
    let redis = Redis::start(&dir("no-claim"));
    let fleet = fleet(&redis).await;
    let plain = state_from(&fleet.lax, "transfer").await;
    // The instance without the setting takes its own state as often as it comes.
    assert!(done(&on(&fleet.lax, second("transfer", &plain)).await));
    assert!(done(&on(&fleet.lax, second("transfer", &plain)).await));
    for addr in fleet.addrs.iter().chain(&fleet.addrs) {
        let answer = on(addr, second("transfer", &plain)).await;
        assert_eq!(answer["error"], refused(), "on {addr}: {answer}");
    }
    assert_eq!(redis.keys(), 256, "nothing recorded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_presentations_on_three_instances_admit_exactly_one() {
    let redis = Redis::start(&dir("race"));
    let fleet = fleet(&redis).await;
    for _ in 0..20 {
        let state = state_from(&fleet.addrs[0], "transfer").await;
        let racers: Vec<_> = fleet
            .addrs
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
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_that_comes_back_empty_refuses_earlier_states_and_no_fresh_one() {
    let mut redis = Redis::start(&dir("outage"));
    let fleet = fleet(&redis).await;
    let addrs = &fleet.addrs;
    let spent = state_from(&addrs[0], "transfer").await;
    assert!(done(&on(&addrs[1], second("transfer", &spent)).await));
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
    // Back with nothing persisted, noticed 10 s later: every record is gone,
    // so states issued before are refused everywhere, the spent one first of all.
    redis.start_again();
    fleet.clock.advance(Duration::from_secs(10));
    for addr in addrs {
        for state in [&spent, &during] {
            let answer = on(addr, second("transfer", state)).await;
            assert_eq!(answer["error"], refused(), "on {addr}: {answer}");
        }
    }
    // A round begun after the new epoch completes on the first try, once,
    // on each instance (each reconnected by itself within its deadline).
    fleet.clock.advance(Duration::from_secs(2));
    for (i, addr) in addrs.iter().enumerate() {
        let fresh = state_from(&addrs[(i + 1) % 3], "transfer").await;
        let answer = on(addr, second("transfer", &fresh)).await;
        assert!(done(&answer), "on {addr}: {answer}");
        assert_eq!(
            on(addr, second("transfer", &fresh)).await["error"],
            refused()
        );
    }
}
