//! Request bodies: what the proxy cannot read or must refuse never reaches
//! the upstream; a batch's refused members are answered by the proxy and
//! merged with the upstream's answers; refusals come in the framing the
//! client accepts; headers go upstream as the settings say.

use http::StatusCode;
use serde_json::{Value, json};
use stateseal_proxy::settings::{PrincipalMode, ProxySettings};

use super::{Reply, Rig, asks, call, events, text};

fn refused(id: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": "Invalid or expired requestState", "data": {"reason": "invalid_request_state"}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_oversized_and_non_string_requests_never_reach_the_upstream() {
    let small = ProxySettings::new(PrincipalMode::Unbound)
        .bounds(64 << 10, 64 << 10)
        .expect("bounds");
    let rig = Rig::with(small, |_| Reply::json(&json!({}))).await;
    let (status, _, body) = rig.post("{\"jsonrpc\":\"2.0\",\"id\":1,", &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        serde_json::from_slice::<Value>(&body).expect("JSON"),
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}})
    );
    let huge = call(json!(1), &"x".repeat(70 << 10), None).to_string();
    let (status, _, body) = rig.post(huge, &[]).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        serde_json::from_slice::<Value>(&body).expect("JSON")["error"]["message"],
        "Request body larger than 65536 bytes"
    );
    let mut non_string = call(json!(3), "prod", None);
    non_string["params"]["requestState"] = json!({"forged": true});
    let (status, _, body) = rig.post(non_string.to_string(), &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        serde_json::from_slice::<Value>(&body).expect("JSON"),
        refused(json!(3))
    );
    let (_, _, body) = rig
        .post(call(json!(4), "prod", Some("v2.forged")).to_string(), &[])
        .await;
    assert_eq!(
        serde_json::from_slice::<Value>(&body).expect("JSON"),
        refused(json!(4))
    );
    // A member named twice: an upstream keeping the first copy would read an unverified state.
    let twice = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"deploy","requestState":"v2.forged","requestState":null}}"#;
    let (status, _, body) = rig.post(twice, &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        serde_json::from_slice::<Value>(&body).expect("JSON"),
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "Invalid Request"}})
    );
    assert!(rig.seen().is_empty(), "the upstream was called");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_comes_as_an_event_to_a_client_that_accepts_only_event_streams() {
    let rig = Rig::new(|_| Reply::json(&json!({}))).await;
    let (status, kind, body) = rig
        .post(
            call(json!(5), "prod", Some("v1.forged")).to_string(),
            &[("accept", "text/event-stream")],
        )
        .await;
    assert_eq!((status.as_u16(), kind.as_str()), (200, "text/event-stream"));
    assert_eq!(events(&body), vec![refused(json!(5))]);
    assert!(rig.seen().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_mixing_carriers_and_notifications_is_split_and_merged() {
    let rig = Rig::new(|seen| {
        let batch: Value = serde_json::from_slice(&seen.body).expect("JSON");
        let ids: Vec<Value> = batch.as_array().expect("a batch").iter().filter_map(|m| m.get("id").cloned()).collect();
        assert_eq!(ids, vec![json!(2), json!(3)], "only what was not refused goes on");
        Reply::json(&json!([asks(json!(2), json!("confirm-deploy:staging")), {"jsonrpc": "2.0", "id": 3, "result": {}}]))
    })
    .await;
    let batch = json!([
        call(json!(1), "prod", Some("v2.tampered")),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        call(json!(2), "staging", None),
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
    ]);
    let (status, _, body) = rig.post(batch.to_string(), &[]).await;
    assert_eq!(status, StatusCode::OK);
    let answers: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(answers.as_array().map(Vec::len), Some(3), "{answers}");
    assert!(
        rig.opens(
            answers[0]["result"]["requestState"]
                .as_str()
                .expect("sealed"),
            "staging",
            "confirm-deploy:staging"
        )
    );
    assert_eq!(answers[1], json!({"jsonrpc": "2.0", "id": 3, "result": {}}));
    assert_eq!(answers[2], refused(json!(1)));
    assert!(!text(&body).contains("confirm-deploy"));
    // Only notifications left after the refusals: the upstream's 202, and the proxy's answers.
    let rig = Rig::new(|_| Reply {
        status: StatusCode::ACCEPTED,
        ..Reply::bytes("text/plain", Vec::new())
    })
    .await;
    let batch = json!([call(json!(9), "prod", Some("v2.x")), {"jsonrpc": "2.0", "method": "notifications/initialized"}]);
    let (status, _, body) = rig.post(batch.to_string(), &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        serde_json::from_slice::<Value>(&body).expect("JSON"),
        json!([refused(json!(9))])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_has_no_state_passes_byte_for_byte_and_headers_go_as_configured() {
    let odd = b"{ \"jsonrpc\" : \"2.0\",\n \"id\": 1, \"result\": {\"tools\": []} }".to_vec();
    let sent = odd.clone();
    let header = http::HeaderName::from_static("x-jwt-payload");
    let settings = ProxySettings::new(PrincipalMode::Header(header));
    let rig = Rig::with(settings, move |_| {
        Reply::bytes("application/json", sent.clone())
    })
    .await;
    let claims = r#"{"client_id":"app","iss":"https://gw.example","sub":"alice"}"#;
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let headers = [
        ("x-jwt-payload", claims),
        ("authorization", "Bearer t0ken"),
        ("mcp-session-id", "s-9"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/list"),
    ];
    let (status, _, body) = rig.post(list.clone(), &headers).await;
    assert_eq!((status, body), (StatusCode::OK, odd));
    let seen = rig.seen();
    let h = &seen[0].headers;
    assert_eq!(seen[0].body, list.as_bytes());
    assert!(
        h.get("x-jwt-payload").is_none(),
        "the caller's claims stay at the proxy"
    );
    assert!(
        h.get("authorization").is_none(),
        "no token goes upstream unless configured"
    );
    assert_eq!(
        h.get("mcp-session-id").map(|v| v.as_bytes()),
        Some(&b"s-9"[..])
    );
    assert_eq!(
        h.get("mcp-protocol-version").map(|v| v.as_bytes()),
        Some(&b"2026-07-28"[..])
    );
    assert_eq!(
        h.get("mcp-method").map(|v| v.as_bytes()),
        Some(&b"tools/list"[..])
    );
    // No claims: the request is refused before anything else.
    let (status, _, _) = rig.post(list, &[]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(rig.seen().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_passed_unchanged_keeps_its_length() {
    let rig = Rig::new(|_| Reply {
        status: StatusCode::NOT_FOUND,
        ..Reply::bytes("text/plain", b"no such session".to_vec())
    })
    .await;
    let response = rig
        .client
        .post(&rig.url)
        .header("content-type", "application/json")
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string())
        .send()
        .await
        .expect("an answer");
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        response
            .headers()
            .get("content-length")
            .map(|v| v.as_bytes()),
        Some(&b"15"[..])
    );
    assert!(response.headers().get("transfer-encoding").is_none());
    assert_eq!(
        response.bytes().await.expect("body"),
        &b"no such session"[..]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_a_case_insensitive_server_would_read_never_reaches_the_upstream() {
    let rig = Rig::new(|_| Reply::json(&json!({}))).await;
    for body in [
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"deploy","RequestState":"v2.forged"}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/list","METHOD":"tools/call","params":{"name":"deploy","requestState":"v2.forged"}}"#,
    ] {
        let (status, _, got) = rig.post(body, &[]).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(
            serde_json::from_slice::<Value>(&got).expect("JSON"),
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "Invalid Request"}})
        );
    }
    assert!(rig.seen().is_empty(), "the upstream was called");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_a_connection_header_names_stay_on_that_connection() {
    let rig = Rig::new(|_| Reply {
        headers: vec![
            ("connection", "x-upstream-hop"),
            ("x-upstream-hop", "1"),
            ("x-upstream-end", "2"),
        ],
        ..Reply::json(&json!({"jsonrpc": "2.0", "id": 1, "result": {}}))
    })
    .await;
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let response = rig
        .client
        .post(&rig.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("connection", "keep-alive, X-Client-Hop")
        .header("x-client-hop", "1")
        .header("x-client-end", "2")
        .body(list)
        .send()
        .await
        .expect("the proxy answers");
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers().get("x-upstream-hop").is_none());
    assert_eq!(
        response
            .headers()
            .get("x-upstream-end")
            .map(|v| v.as_bytes()),
        Some(&b"2"[..])
    );
    let seen = rig.seen();
    assert!(seen[0].headers.get("x-client-hop").is_none());
    assert_eq!(
        seen[0].headers.get("x-client-end").map(|v| v.as_bytes()),
        Some(&b"2"[..])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_that_do_not_mirror_the_body_never_reach_the_upstream() {
    let rig = Rig::new(|s| {
        let call: Value = serde_json::from_slice(&s.body).expect("JSON");
        match call["params"]["requestState"].as_str() {
            None => Reply::json(&asks(call["id"].clone(), json!("step-2"))),
            Some(_) => {
                Reply::json(&json!({"jsonrpc": "2.0", "id": call["id"], "result": {"content": []}}))
            }
        }
    })
    .await;
    let modern = ("mcp-protocol-version", "2026-07-28");
    let mirrored = [modern, ("mcp-method", "tools/call"), ("mcp-name", "deploy")];
    let (_, _, body) = rig
        .post(call(json!(1), "prod", None).to_string(), &mirrored)
        .await;
    let answer: Value = serde_json::from_slice(&body).expect("JSON");
    let token = answer["result"]["requestState"].as_str().expect("a token");
    let echo = call(json!(2), "prod", Some(token)).to_string();
    // A gateway in front routed or authorized on the headers; the body says otherwise.
    let cases: [(&[(&str, &str)], &str); 5] = [
        (
            &[modern, ("mcp-method", "tools/call"), ("mcp-name", "lookup")],
            "the Mcp-Name header does not match the body",
        ),
        (
            &[modern, ("mcp-method", "tools/list"), ("mcp-name", "deploy")],
            "the Mcp-Method header does not match the body",
        ),
        (
            &[modern, ("mcp-method", "tools/call")],
            "the Mcp-Name header is missing",
        ),
        (&[modern], "the Mcp-Method header is missing"),
        (
            &[("mcp-method", "tools/call"), ("mcp-name", "lookup")],
            "the Mcp-Name header does not match the body",
        ),
    ];
    for (headers, why) in cases {
        let (status, kind, body) = rig.post(echo.clone(), headers).await;
        assert_eq!(
            (status, kind.as_str()),
            (StatusCode::BAD_REQUEST, "application/json"),
            "{why}"
        );
        assert_eq!(
            serde_json::from_slice::<Value>(&body).expect("JSON"),
            json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32020, "message": format!("Header mismatch: {why}")}})
        );
        assert!(!text(&body).contains("lookup") && !text(&body).contains(token));
    }
    // A client that takes only events gets the refusal as one, still with 400.
    let only_events = [
        modern,
        ("mcp-method", "tools/call"),
        ("accept", "text/event-stream"),
    ];
    let (status, _, body) = rig.post(echo.clone(), &only_events).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(events(&body)[0]["error"]["code"], -32020);
    assert_eq!(rig.seen().len(), 1, "the upstream was called");
    // Nothing was spent: the same echo with headers that agree goes on, as they came.
    let (status, _, _) = rig.post(echo, &mirrored).await;
    assert_eq!(status, StatusCode::OK);
    let seen = rig.seen();
    let sent: Value = serde_json::from_slice(&seen[1].body).expect("JSON");
    assert_eq!(sent["params"]["requestState"], "step-2");
    assert_eq!(seen[1].headers["mcp-name"], "deploy");
    // A 2025-era client, which never sends them, is served as before.
    let old = [("mcp-protocol-version", "2025-11-25")];
    let (status, _, _) = rig
        .post(call(json!(3), "prod", None).to_string(), &old)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(rig.seen().len(), 3);
}
