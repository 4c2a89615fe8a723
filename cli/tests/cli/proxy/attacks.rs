//! Every state the proxy must refuse — tampered, minted for other arguments,
//! another user's, expired, a single-use state replayed — is answered by the
//! proxy with the frozen `-32602` and never reaches the upstream (counted in
//! the upstream's own log); a state minted for this round, user and time is
//! accepted, so each refusal is for its one reason. The caller comes from a
//! trusted gateway's claims header.

use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::{AUDIENCE, Fleet, ProxyProcess, Sdk, Upstream, client};

const ISSUER: &str = "https://gateway.example";

fn gateway(subject: &str) -> Value {
    let claims = json!({"iss": ISSUER, "sub": subject, "client_id": "app"});
    json!({"x-jwt-payload": claims.to_string()})
}

/// A state for `deploy` with `arguments`, sealed for `subject` at `now` by the CLI.
fn minted(fleet: &Fleet, arguments: &Value, subject: &str, now: u64) -> String {
    let principal = fleet.dir.join(format!("principal-{subject}"));
    std::fs::write(&principal, json!(["app", ISSUER, subject]).to_string()).expect("principal");
    let params = json!({"name": "deploy", "arguments": arguments}).to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_stateseal"))
        .args([
            "token",
            "mint",
            "--keyset",
            &fleet.store(),
            "--method",
            "tools/call",
            "--params",
            &params,
        ])
        .args(&fleet.pins)
        .args([
            "--audience",
            AUDIENCE,
            "--state",
            "confirm-deploy:prod",
            "--now",
            &now.to_string(),
        ])
        .arg("--principal-file")
        .arg(&principal)
        .output()
        .expect("mint");
    assert!(
        out.status.success(),
        "mint: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn refused(out: &Value) -> bool {
    let e = &out["rounds"][0]["error"];
    e["code"] == -32602 && e["message"] == "Invalid or expired requestState"
}

fn attacks_are_refused_before_the_upstream(upstream_sdk: Sdk, mode: &str, sdk: Sdk) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let extra = "replay_store = \"memory://\"\nsingle_use_tools = [\"transfer\"]\n\n\
                 [proxy]\nprincipal = \"header\"\nprincipal_header = \"x-jwt-payload\"\n";
    // A keyset two hours old, so a state sealed an hour ago is long expired.
    let fleet = Fleet::new(
        &format!("attacks-{upstream_sdk:?}"),
        extra,
        Some(now - 7200),
    );
    let upstream = Upstream::start(upstream_sdk, mode, &fleet.dir);
    let proxy = ProxyProcess::start(&upstream.url, &fleet.config);
    let alice = gateway("alice");
    let first = client(sdk, &proxy.url, &["tool", "transfer"], Some(&alice));
    let tool = first["rounds"][0]["state"]
        .as_str()
        .expect("a deploy state")
        .to_owned();
    let transfer = first["rounds"][1]["state"]
        .as_str()
        .expect("a transfer state")
        .to_owned();
    assert_eq!(first["rounds"][1]["error"], Value::Null, "{first}");
    let before = upstream.received().len();
    assert_eq!(before, 4, "two rounds of two");

    let mut tampered = tool.clone().into_bytes();
    let i = tampered.len() / 2;
    tampered[i] = if tampered[i] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).expect("ascii");
    let attacks = [
        ("tampered", tampered, "tool", &alice),
        (
            "other arguments",
            minted(&fleet, &json!({"env": "staging"}), "alice", now),
            "tool",
            &alice,
        ),
        ("another user's", tool.clone(), "tool", &gateway("bob")),
        (
            "expired",
            minted(&fleet, &json!({"env": "prod"}), "alice", now - 3600),
            "tool",
            &alice,
        ),
        ("replayed single-use", transfer, "transfer", &alice),
        (
            "the plaintext",
            "confirm-deploy:prod".to_owned(),
            "tool",
            &alice,
        ),
    ];
    for (name, state, kind, caller) in &attacks {
        let out = client(sdk, &proxy.url, &["--echo", state, kind], Some(caller));
        assert!(refused(&out), "{name} state not refused: {out}");
    }
    assert_eq!(
        upstream.received().len(),
        before,
        "a refused state reached the upstream"
    );

    // The control: a state minted now, for these arguments and this user, is accepted.
    let fresh = minted(&fleet, &json!({"env": "prod"}), "alice", now);
    let out = client(sdk, &proxy.url, &["--echo", &fresh, "tool"], Some(&alice));
    assert_eq!(out["rounds"][0]["error"], Value::Null, "{out}");
    let received = upstream.received();
    assert_eq!(received.len(), before + 1);
    assert_eq!(received[before]["requestState"], "confirm-deploy:prod");

    // Nothing of a state, a token or a principal in the proxy's log.
    let log = proxy.logged();
    for secret in ["confirm-", "alice", "bob", "gateway.example", &tool[3..40]] {
        assert!(
            !log.contains(secret),
            "{secret:?} in the proxy's log: {log}"
        );
    }
}

#[test]
fn every_bad_state_is_refused_by_the_proxy_in_front_of_a_python_sdk_server() {
    attacks_are_refused_before_the_upstream(Sdk::Python, "json", Sdk::TypeScript);
}

#[test]
fn every_bad_state_is_refused_by_the_proxy_in_front_of_a_typescript_sdk_server() {
    attacks_are_refused_before_the_upstream(Sdk::TypeScript, "sse", Sdk::Python);
}
