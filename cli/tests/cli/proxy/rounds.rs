//! Tool, prompt and resource rounds through the proxy complete with both
//! SDKs' servers and clients, in JSON and SSE answers; the upstream receives
//! exactly the plaintext it minted, and no plaintext state is ever on the
//! client's side of the wire.

use serde_json::Value;

use super::{Fleet, ProxyProcess, Sdk, Upstream, client};

const KINDS: [&str; 4] = ["tool", "transfer", "prompt", "resource"];

/// What each client's final answers are, in KINDS order.
fn finals(sdk: Sdk) -> [&'static str; 4] {
    let amount = if sdk == Sdk::Python { "100" } else { "42" };
    [
        "deployed to prod",
        if amount == "100" {
            "transferred 100"
        } else {
            "transferred 42"
        },
        "Hello Dr Ada",
        "the document",
    ]
}

fn plaintexts(sdk: Sdk) -> [String; 4] {
    let amount = if sdk == Sdk::Python { "100" } else { "42" };
    [
        "confirm-deploy:prod".into(),
        format!("confirm-transfer:{amount}"),
        "greet:Ada".into(),
        "doc:open".into(),
    ]
}

fn rounds_complete(upstream_sdk: Sdk, mode: &str) {
    let fleet = Fleet::new(&format!("rounds-{upstream_sdk:?}-{mode}"), "", None);
    let upstream = Upstream::start(upstream_sdk, mode, &fleet.dir);
    let proxy = ProxyProcess::start(&upstream.url, &fleet.config);
    let mut expected_received = Vec::new();
    for sdk in [Sdk::Python, Sdk::TypeScript] {
        let out = client(sdk, &proxy.url, &KINDS, None);
        let rounds = out["rounds"].as_array().expect("rounds");
        assert_eq!(rounds.len(), 4, "{out}");
        for ((round, final_text), plain) in rounds.iter().zip(finals(sdk)).zip(plaintexts(sdk)) {
            assert_eq!(
                round["error"],
                Value::Null,
                "{sdk:?} via {upstream_sdk:?}/{mode}: {round}"
            );
            assert_eq!(round["final"], final_text, "{round}");
            let state = round["state"].as_str().expect("a state");
            assert!(
                state.starts_with("v2.") && !state.contains(plain.as_str()),
                "{state}"
            );
            expected_received.push(Value::Null);
            expected_received.push(Value::String(plain));
        }
        // Not one body on the client's side of the wire holds a plaintext state.
        let bodies = out["bodies"].as_array().expect("bodies");
        assert!(bodies.len() >= 9, "{out}");
        for body in bodies {
            let body = body.as_str().expect("text");
            for plain in plaintexts(sdk) {
                assert!(!body.contains(&plain), "{plain} reached the client: {body}");
            }
        }
    }
    // The upstream received each round once, round 2 with exactly the plaintext it minted.
    let received: Vec<Value> = upstream
        .received()
        .iter()
        .map(|r| r["requestState"].clone())
        .collect();
    assert_eq!(received, expected_received);
    assert!(
        !proxy.logged().contains("confirm-"),
        "a state in the proxy's log: {}",
        proxy.logged()
    );
}

#[test]
fn a_python_sdk_server_answering_json_completes_every_round_behind_the_proxy() {
    rounds_complete(Sdk::Python, "json");
}

#[test]
fn a_python_sdk_server_answering_sse_completes_every_round_behind_the_proxy() {
    rounds_complete(Sdk::Python, "sse");
}

#[test]
fn a_typescript_sdk_server_answering_json_completes_every_round_behind_the_proxy() {
    rounds_complete(Sdk::TypeScript, "json");
}

#[test]
fn a_typescript_sdk_server_answering_sse_completes_every_round_behind_the_proxy() {
    rounds_complete(Sdk::TypeScript, "sse");
}
