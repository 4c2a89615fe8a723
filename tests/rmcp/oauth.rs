//! The OAuth resource-server layer (`stateseal-oauth`) in front of the
//! boundary, against a local issuer: a state sealed for one subject is
//! refused for another, and a request without a valid token never reaches
//! the handler.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::json;
use stateseal::boundary::Boundary;
use stateseal::rmcp_adapter::StateSealed;
use stateseal::{Envelope, KeyRing, RingHandle, Secret};
use stateseal_oauth::{ResourceServer, ResourceServerConfig, require_bearer};
use stateseal_testkit::issuer::Issuer;

use crate::conversation::Confirming;

const AUDIENCE: &str = "http://127.0.0.1/mcp";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_sealed_for_one_subject_is_refused_for_another() {
    let issuer = Issuer::start();
    let config = ResourceServerConfig::builder()
        .issuer(&issuer.url)
        .audience(AUDIENCE)
        .jwks_uri(issuer.jwks_uri())
        .build()
        .expect("config");
    let auth = Arc::new(ResourceServer::new(config).expect("server"));
    let ring = Arc::new(RingHandle::new(
        KeyRing::from_secrets(&[Secret::generate().expect("rng")]).expect("ring"),
    ));
    let envelope = Envelope::builder(ring, Some("svc")).build().expect("env");
    let router = crate::routes::mcp_routes(StateSealed::new(
        Confirming::default(),
        Boundary::new(Arc::new(envelope)),
    ))
    .layer(axum::middleware::from_fn_with_state(auth, require_bearer));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let token = |sub: &str| {
        issuer.mint(&json!({
            "iss": issuer.url, "aud": AUDIENCE, "sub": sub, "client_id": "client-1",
            "iat": t, "exp": t + 300,
        }))
    };
    let (alice, bob) = (token("alice"), token("bob"));
    let call = |token: String, params: serde_json::Value| {
        let a = addr.clone();
        tokio::task::spawn_blocking(move || crate::http::call(&a, &token, params))
    };
    let first = call(
        alice.clone(),
        json!({"name": "deploy", "arguments": {"env": "prod"}}),
    )
    .await
    .expect("join");
    let state = first["result"]["requestState"]
        .as_str()
        .expect("sealed state")
        .to_owned();
    let echo = json!({"name": "deploy", "arguments": {"env": "prod"}, "requestState": state,
        "inputResponses": {"confirm": {"action": "accept"}}});
    let own = call(alice, echo.clone()).await.expect("join");
    assert!(own.get("error").is_none(), "alice's own echo: {own}");
    let replayed = call(bob, echo).await.expect("join");
    assert_eq!(
        replayed["error"],
        json!({"code": -32602, "message": "Invalid or expired requestState", "data": {"reason": "invalid_request_state"}})
    );
    // Without a valid token the request stops at the layer.
    let raw = tokio::task::spawn_blocking(move || {
        let mut s = TcpStream::connect(&addr).expect("connect");
        write!(
            s,
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer alice-token\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
        )
        .expect("write");
        let mut raw = String::new();
        s.read_to_string(&mut raw).expect("read");
        raw
    })
    .await
    .expect("join");
    assert!(raw.starts_with("HTTP/1.1 401"), "{raw}");
    assert!(
        raw.to_ascii_lowercase()
            .contains("www-authenticate: bearer error=\"invalid_token\""),
        "{raw}"
    );
    server.abort();
}
