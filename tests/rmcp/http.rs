//! Over real HTTP on loopback: the default principal source reads the
//! `AuthenticatedPrincipal` an auth layer put in the request extensions, so
//! another user's bearer token cannot replay a state.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;

use serde_json::{Value, json};
use stateseal::boundary::Boundary;
use stateseal::rmcp_adapter::StateSealed;
use stateseal::{Envelope, KeyRing, RingHandle, Secret};

use crate::conversation::Confirming;

/// The `_meta` of a 2026-07-28 stateless request.
pub(crate) fn request_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}
    })
}

/// A `tools/call` request (2026-07-28 stateless lifecycle) for `params`:
/// the tool's name and the JSON-RPC body.
pub(crate) fn tools_call(params: Value) -> (String, String) {
    let mut params = params;
    params["_meta"] = request_meta();
    let name = params["name"].as_str().unwrap_or_default().to_owned();
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).to_string();
    (name, body)
}

/// One MCP request over HTTP/1.1; the JSON-RPC response.
pub(crate) fn call(addr: &str, token: &str, params: Value) -> Value {
    let (name, body) = tools_call(params);
    post(addr, token, &name, &body)
}

/// Posts a `tools/call` request body exactly as given; the JSON-RPC response.
pub(crate) fn post(addr: &str, token: &str, name: &str, body: &str) -> Value {
    let mut s = TcpStream::connect(addr).expect("connect");
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {name}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut raw = String::new();
    s.read_to_string(&mut raw).expect("read");
    let data = raw
        .lines()
        .find_map(|l| l.strip_prefix("data: ").filter(|d| d.starts_with('{')))
        .unwrap_or_else(|| panic!("no JSON-RPC in {raw}"));
    serde_json::from_str(data).expect("json")
}

/// Serves `envelope` behind `StateSealed` and the bearer-auth stand-in on a
/// loopback port; returns its address and the server task.
pub(crate) async fn serve(envelope: Envelope) -> (String, tokio::task::JoinHandle<()>) {
    let router = crate::bearer_auth::mcp_router(StateSealed::new(
        Confirming::default(),
        Boundary::new(Arc::new(envelope)),
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    (addr, server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_users_bearer_token_cannot_replay_a_state() {
    let ring = Arc::new(RingHandle::new(
        KeyRing::from_secrets(&[Secret::generate().expect("rng")]).expect("ring"),
    ));
    let envelope = Envelope::builder(ring, Some("svc")).build().expect("env");
    let (addr, server) = serve(envelope).await;

    let a = addr.clone();
    let first = tokio::task::spawn_blocking(move || {
        call(
            &a,
            "alice-token",
            json!({"name": "deploy", "arguments": {"env": "prod"}}),
        )
    })
    .await
    .expect("join");
    let state = first["result"]["requestState"]
        .as_str()
        .expect("sealed state")
        .to_owned();
    assert!(state.starts_with("v1."));
    let replay = |token: &'static str| {
        let (a, state) = (addr.clone(), state.clone());
        tokio::task::spawn_blocking(move || {
            call(
                &a,
                token,
                json!({"name": "deploy", "arguments": {"env": "prod"}, "requestState": state, "inputResponses": {"confirm": {"action": "accept"}}}),
            )
        })
    };
    let alice = replay("alice-token").await.expect("join");
    assert!(
        alice.get("error").is_none(),
        "alice's own echo is accepted: {alice}"
    );
    let bob = replay("bob-token").await.expect("join");
    assert_eq!(
        bob["error"],
        json!({"code": -32602, "message": "Invalid or expired requestState", "data": {"reason": "invalid_request_state"}})
    );
    server.abort();
}
