//! Who the caller is, and the policies around a round: the bearer JWT
//! validated against the issuer's keys (no token, no request; one user's
//! state refused to another; the token kept from the upstream unless
//! configured), `treat-as-absent`, ids JavaScript reads as one, `DELETE`.

use http::StatusCode;
use serde_json::{Value, json};
use stateseal::boundary::FailureMode;
use stateseal_oauth::ResourceServerConfig;
use stateseal_proxy::settings::{PrincipalMode, ProxySettings};
use stateseal_testkit::issuer::Issuer;

use super::{Reply, Rig, asks, call, text};

const AUDIENCE: &str = "https://mcp.example/mcp";

fn oauth(issuer: &Issuer) -> ProxySettings {
    let config = ResourceServerConfig::builder()
        .issuer(issuer.url.clone())
        .audience(AUDIENCE)
        .jwks_uri(issuer.jwks_uri())
        .build()
        .expect("oauth");
    ProxySettings::new(PrincipalMode::OAuth(config))
}

/// The upstream of a deploy round: asks first, answers the echo.
fn deploy(seen: &super::Seen) -> Reply {
    let call: Value = serde_json::from_slice(&seen.body).expect("JSON");
    match call["params"]["requestState"].as_str() {
        None => Reply::json(&asks(call["id"].clone(), json!("confirm-deploy:prod"))),
        Some(state) => Reply::json(
            &json!({"jsonrpc": "2.0", "id": call["id"], "result": {"content": [{"type": "text", "text": state}]}}),
        ),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn states_are_bound_to_the_caller_the_bearer_token_names() {
    let issuer = Issuer::start();
    let rig = Rig::with(oauth(&issuer), deploy).await;
    let alice = format!("Bearer {}", issuer.access_token("alice", AUDIENCE, 600));
    let bob = format!("Bearer {}", issuer.access_token("bob", AUDIENCE, 600));
    // No token, or one for another resource: refused before anything else.
    let (status, _, _) = rig
        .post(call(json!(1), "prod", None).to_string(), &[])
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let elsewhere = format!(
        "Bearer {}",
        issuer.access_token("alice", "https://other.example", 600)
    );
    let (status, _, _) = rig
        .post(
            call(json!(1), "prod", None).to_string(),
            &[("authorization", &elsewhere)],
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(rig.seen().is_empty());
    let (status, _, body) = rig
        .post(
            call(json!(1), "prod", None).to_string(),
            &[("authorization", &alice)],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let answer: Value = serde_json::from_slice(&body).expect("JSON");
    let token = answer["result"]["requestState"]
        .as_str()
        .expect("sealed")
        .to_owned();
    assert!(
        rig.seen()[0].headers.get("authorization").is_none(),
        "the token stays at the proxy"
    );
    // Bob cannot finish Alice's round; Alice can.
    let (_, _, body) = rig
        .post(
            call(json!(2), "prod", Some(&token)).to_string(),
            &[("authorization", &bob)],
        )
        .await;
    assert_eq!(
        serde_json::from_slice::<Value>(&body).expect("JSON")["error"]["code"],
        -32602
    );
    assert_eq!(rig.seen().len(), 1, "bob's echo never reached the upstream");
    let (_, _, body) = rig
        .post(
            call(json!(3), "prod", Some(&token)).to_string(),
            &[("authorization", &alice)],
        )
        .await;
    assert!(
        text(&body).contains("\"text\":\"confirm-deploy:prod\""),
        "{}",
        text(&body)
    );
    // Forwarding the token is a setting.
    let rig = Rig::with(oauth(&issuer).forward_authorization(true), deploy).await;
    rig.post(
        call(json!(1), "prod", None).to_string(),
        &[("authorization", &alice)],
    )
    .await;
    assert_eq!(
        rig.seen()[0]
            .headers
            .get("authorization")
            .map(|v| v.as_bytes()),
        Some(alice.as_bytes())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn treat_as_absent_strips_a_refused_state_and_the_upstream_starts_afresh() {
    let rig = Rig::with_mode(
        ProxySettings::new(PrincipalMode::Unbound),
        FailureMode::TreatAsAbsent,
        deploy,
    )
    .await;
    let (status, _, body) = rig
        .post(call(json!(1), "prod", Some("v2.forged")).to_string(), &[])
        .await;
    assert_eq!(status, StatusCode::OK);
    let sent: Value = serde_json::from_slice(&rig.seen()[0].body).expect("JSON");
    assert!(sent["params"].get("requestState").is_none(), "{sent}");
    let answer: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(
        answer["result"]["resultType"], "input_required",
        "a fresh round: {answer}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_to_an_id_javascript_reads_as_the_requests_is_sealed_for_it() {
    // The client wrote 1.0; the upstream (JavaScript) answers 1.
    let rig = Rig::new(|_| Reply::json(&asks(json!(1), json!("confirm-deploy:prod")))).await;
    let body = call(json!(1), "prod", None)
        .to_string()
        .replace("\"id\":1", "\"id\":1.0");
    assert!(body.contains("\"id\":1.0"), "{body}");
    let (_, _, got) = rig.post(body, &[]).await;
    let answer: Value = serde_json::from_slice(&got).expect("JSON");
    assert!(rig.opens(
        answer["result"]["requestState"].as_str().expect("sealed"),
        "prod",
        "confirm-deploy:prod"
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_ends_a_session_upstream() {
    let rig = Rig::new(|_| Reply {
        status: StatusCode::NO_CONTENT,
        ..Reply::bytes("text/plain", Vec::new())
    })
    .await;
    let response = rig
        .client
        .delete(&rig.url)
        .header("mcp-session-id", "s-7")
        .send()
        .await
        .expect("an answer");
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    let seen = rig.seen();
    assert_eq!(seen[0].method, http::Method::DELETE);
    assert_eq!(
        seen[0].headers.get("mcp-session-id").map(|v| v.as_bytes()),
        Some(&b"s-7"[..])
    );
}
