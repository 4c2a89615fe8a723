//! An upstream that fails: down, dying mid-stream, closing mid-event,
//! sending an event or a JSON answer past the bound, a state that is not
//! a string, or the plaintext it was sent echoed back in an error. The
//! client gets a JSON-RPC error saying so for each request still
//! unanswered, and no byte of a state.

use http::StatusCode;
use serde_json::{Value, json};
use stateseal_proxy::settings::{PrincipalMode, ProxySettings};

use super::{Reply, Rig, asks, call, events, last_message, text};

fn upstream_error(id: Value, why: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": format!("upstream MCP server {why}")}})
}

/// A `deploy` call answered by `reply`: the client gets `502` with the error
/// saying `why` and nothing else, so no byte of a state; the rig.
async fn refused_whole(reply: Reply, why: &str) -> Rig {
    let rig = Rig::new(move |_| reply.clone()).await;
    let (status, _, got) = rig
        .post(call(json!(1), "prod", None).to_string(), &[])
        .await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{why}");
    assert_eq!(
        serde_json::from_slice::<Value>(&got).expect("JSON"),
        upstream_error(json!(1), why)
    );
    rig
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_is_down_is_answered_with_a_json_rpc_error_to_each_request() {
    // A port nothing listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let rig = Rig::in_front_of(
        &format!("http://127.0.0.1:{port}/mcp"),
        ProxySettings::new(PrincipalMode::Unbound),
        stateseal::boundary::FailureMode::Reject,
        Default::default(),
    )
    .await;
    let (status, _, body) = rig
        .post(call(json!(7), "prod", None).to_string(), &[])
        .await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    assert_eq!(
        serde_json::from_slice::<Value>(&body).expect("JSON"),
        upstream_error(json!(7), "unavailable")
    );
    let batch = json!([call(json!(1), "a", None), {"jsonrpc": "2.0", "method": "notifications/initialized"}, call(json!("b"), "b", None)]);
    let (_, _, body) = rig.post(batch.to_string(), &[]).await;
    assert_eq!(
        serde_json::from_slice::<Value>(&body).expect("JSON"),
        json!([
            upstream_error(json!(1), "unavailable"),
            upstream_error(json!("b"), "unavailable")
        ])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_closes_mid_event_leaks_nothing_of_it() {
    let note =
        b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n";
    let mut body = note.to_vec();
    body.extend_from_slice(format!("data: {}", asks(json!(1), json!("plain-secret"))).as_bytes());
    // Closed cleanly mid-event.
    let sent = body.clone();
    let rig = Rig::new(move |_| Reply::sse(&sent, 16)).await;
    let (status, _, got) = rig
        .post(call(json!(1), "prod", None).to_string(), &[])
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(got.starts_with(note), "{}", text(&got));
    assert!(!text(&got).contains("plain-secret"), "{}", text(&got));
    assert_eq!(
        events(&got)[1],
        upstream_error(json!(1), "closed the stream mid-event")
    );
    // The connection dropped mid-event, after the client saw the stream begin.
    let die = std::sync::Arc::new(tokio::sync::Notify::new());
    let (sent, notify) = (body.clone(), std::sync::Arc::clone(&die));
    let rig = Rig::new(move |_| Reply {
        die: Some(std::sync::Arc::clone(&notify)),
        ..Reply::sse(&sent, 16)
    })
    .await;
    let got = rig
        .post_then(call(json!(1), "prod", None).to_string(), note, &die)
        .await;
    assert!(got.starts_with(note), "{}", text(&got));
    assert!(!text(&got).contains("plain-secret"), "{}", text(&got));
    assert_eq!(
        events(&got)[1],
        upstream_error(json!(1), "failed mid-stream"),
        "{}",
        text(&got)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_or_answer_past_the_bound_is_refused_whole() {
    let small = ProxySettings::new(PrincipalMode::Unbound)
        .bounds(64 << 10, 64 << 10)
        .expect("bounds");
    let big = asks(json!(1), json!(format!("plain-{}", "x".repeat(100 << 10))));
    let event = format!("data: {big}\n\n").into_bytes();
    let rig = Rig::with(small.clone(), move |_| Reply::sse(&event, 8192)).await;
    let (_, _, got) = rig
        .post(call(json!(1), "prod", None).to_string(), &[])
        .await;
    assert_eq!(
        events(&got),
        vec![upstream_error(
            json!(1),
            "sent an event larger than max_event_bytes"
        )]
    );
    let rig = Rig::with(small, move |_| Reply::json(&big)).await;
    let (status, _, got) = rig
        .post(call(json!(1), "prod", None).to_string(), &[])
        .await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    assert!(!text(&got).contains("plain-"), "{}", text(&got));
    assert_eq!(
        serde_json::from_slice::<Value>(&got).expect("JSON"),
        upstream_error(json!(1), "answered with a body larger than max_event_bytes")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_answer_cut_off_before_it_ends_is_refused_whole() {
    // The connection drops once the state's first bytes are on the wire.
    let die = std::sync::Arc::new(tokio::sync::Notify::new());
    die.notify_one();
    let answer = asks(json!(1), json!("plain-secret-of-the-round")).to_string();
    let cut = answer.find("-of-the-round").expect("the state");
    let reply = Reply {
        die: Some(die),
        ..Reply::bytes("application/json", answer.as_bytes()[..cut].to_vec())
    };
    refused_whole(reply, "failed before its answer ended").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_that_is_not_a_string_or_a_body_that_is_not_json_never_reaches_the_client() {
    let internal =
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "Internal error"}});
    let rig = Rig::new(|_| Reply::json(&asks(json!(1), json!({"plain": "secret"})))).await;
    let (_, _, got) = rig
        .post(call(json!(1), "prod", None).to_string(), &[])
        .await;
    assert_eq!(
        serde_json::from_slice::<Value>(&got).expect("JSON"),
        internal
    );
    let lenient = br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","requestState":"secret","n":NaN}}"#;
    refused_whole(
        Reply::bytes("application/json", lenient.to_vec()),
        "answered with a body that is not JSON",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_names_a_member_twice_never_reaches_the_client() {
    // A client that keeps the first copy would read the plaintext.
    let twice = br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","requestState":"secret-plain","requestState":null}}"#;
    refused_whole(
        Reply::bytes("application/json", twice.to_vec()),
        "answered with JSON that names a member twice",
    )
    .await;
    // In a batch too (the general path), and in an event.
    let batch = [b"[".as_slice(), twice, b"]"].concat();
    let rig = Rig::new(move |_| Reply::bytes("application/json", batch.clone())).await;
    let (status, _, got) = rig
        .post(json!([call(json!(1), "prod", None)]).to_string(), &[])
        .await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    assert!(!text(&got).contains("secret-plain"));
    let stream = [b"event: message\ndata: ".as_slice(), twice, b"\n\n"].concat();
    let rig = Rig::new(move |_| Reply::sse(&stream, 7)).await;
    let (_, _, got) = rig
        .post(call(json!(1), "prod", None).to_string(), &[])
        .await;
    assert!(!text(&got).contains("secret-plain"), "{}", text(&got));
    assert_eq!(
        events(&got),
        vec![upstream_error(
            json!(1),
            "sent an event that names a member twice"
        )]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_under_any_type_a_client_reads_as_json_or_events_is_sealed() {
    // The Python SDK's client reads any type that starts with `application/json` or
    // `text/event-stream` (in any case) as JSON or as events.
    let answer = asks(json!(1), json!("confirm-deploy:prod"));
    for kind in [
        "application/json-seq",
        "Application/JSON5; charset=utf-8",
        "text/event-stream-x",
    ] {
        let body = if kind.starts_with("text") {
            format!("event: message\ndata: {answer}\n\n").into_bytes()
        } else {
            answer.to_string().into_bytes()
        };
        let rig = Rig::new(move |_| Reply::bytes(kind, body.clone())).await;
        let (status, got_kind, got) = rig
            .post(call(json!(1), "prod", None).to_string(), &[])
            .await;
        assert_eq!((status, got_kind.as_str()), (StatusCode::OK, kind));
        assert!(
            !text(&got).contains("confirm-deploy"),
            "{kind}: {}",
            text(&got)
        );
        let sealed = last_message(&got, kind.starts_with("text"));
        let token = sealed["result"]["requestState"].as_str().expect("a state");
        assert!(rig.opens(token, "prod", "confirm-deploy:prod"), "{kind}");
    }
    // A type no client reads as either passes as it came, unless it could hold a state.
    let plain = b"ok: requeststate".to_vec();
    let rig = Rig::new(move |_| Reply::bytes("text/plain", plain.clone())).await;
    let (status, got_kind, got) = rig
        .post(call(json!(1), "prod", None).to_string(), &[])
        .await;
    assert_eq!((status, got_kind.as_str()), (StatusCode::OK, "text/plain"));
    assert_eq!(got, b"ok: requeststate");
    let stated = asks(json!(1), json!("confirm-deploy:prod")).to_string();
    refused_whole(
        Reply::bytes("text/plain", stated.into_bytes()),
        "answered with a state under a type that is neither JSON nor events",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compressed_answer_is_refused_since_no_state_in_it_can_be_seen() {
    use std::io::Write as _;
    let answer = asks(json!(1), json!("confirm-deploy:prod")).to_string();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(answer.as_bytes()).expect("gzip");
    let gzipped = gz.finish().expect("gzip");
    let gzip = Reply {
        headers: vec![("content-encoding", "gzip")],
        ..Reply::bytes("application/json", gzipped)
    };
    let rig = refused_whole(gzip, "answered with a compressed body").await;
    // The proxy asked for none.
    let seen = rig.seen();
    assert!(seen[0].headers.get("accept-encoding").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plaintext_state_an_upstream_echoes_in_an_error_does_not_reach_the_client() {
    // JSON with 200, JSON with 400 (its status kept), and an event.
    for (sse, status) in [
        (false, StatusCode::OK),
        (false, StatusCode::BAD_REQUEST),
        (true, StatusCode::OK),
    ] {
        let rig = Rig::new(move |seen| {
            let call: Value = serde_json::from_slice(&seen.body).expect("JSON");
            let answer = if call["params"].get("requestState").is_some() {
                // The echo's plaintext, handed back in the error's data.
                json!({"jsonrpc": "2.0", "id": call["id"], "error": {"code": -32602, "message": "bad input", "data": {"params": call["params"]}}})
            } else {
                asks(call["id"].clone(), json!("plain-secret-state"))
            };
            let second = call["params"].get("requestState").is_some();
            if second && !sse {
                Reply {
                    status,
                    ..Reply::json(&answer)
                }
            } else {
                Reply::message(&answer, sse)
            }
        })
        .await;
        let (_, _, first) = rig
            .post(call(json!(1), "prod", None).to_string(), &[])
            .await;
        let first = last_message(&first, sse);
        let token = first["result"]["requestState"].as_str().expect("sealed");
        let (got_status, _, got) = rig
            .post(call(json!(2), "prod", Some(token)).to_string(), &[])
            .await;
        assert_eq!(got_status, status);
        assert!(
            text(&rig.seen()[1].body).contains("plain-secret-state"),
            "the upstream read its plaintext"
        );
        assert!(!text(&got).contains("plain-secret-state"), "{}", text(&got));
        let error = last_message(&got, sse);
        assert_eq!(
            error["error"]["data"]["params"],
            json!({"name": "deploy", "arguments": {"env": "prod"}}),
            "sse: {sse}, {status}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_an_upstream_spells_as_a_case_insensitive_client_reads_it_does_not_reach_the_client()
 {
    // A server whose own types write `request_state` (pydantic) or
    // `RequestState` (Go without tags): a Go or pydantic client reads either
    // as the state. In a JSON body and in an event.
    for (sse, name) in [(false, "request_state"), (true, "RequestState")] {
        let rig = Rig::new(move |seen| {
            let call: Value = serde_json::from_slice(&seen.body).expect("JSON");
            let answer = json!({"jsonrpc": "2.0", "id": call["id"], "result": {
                "resultType": "input_required", "inputRequests": {}, name: "plain-secret-state"}});
            Reply::message(&answer, sse)
        })
        .await;
        let (status, _, got) = rig
            .post(call(json!(1), "prod", None).to_string(), &[])
            .await;
        assert_eq!(status, StatusCode::OK);
        assert!(!text(&got).contains("plain-secret-state"), "{}", text(&got));
        let answer = last_message(&got, sse);
        assert_eq!(
            answer["result"],
            json!({"resultType": "input_required", "inputRequests": {}}),
            "sse: {sse}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_answer_without_a_state_passes_as_it_came_with_its_status() {
    let spaced = br#"{ "jsonrpc" : "2.0", "id" : null, "error" : {"code": -32001, "message": "Session not found"} }"#;
    for (status, kind, body) in [
        (StatusCode::NOT_FOUND, "application/json", spaced.to_vec()),
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            "text/html",
            b"<h1>Internal Server Error</h1>".to_vec(),
        ),
    ] {
        let sent = body.clone();
        let rig = Rig::new(move |_| Reply {
            status,
            ..Reply::bytes(kind, sent.clone())
        })
        .await;
        let (got_status, got_kind, got) = rig
            .post(call(json!(1), "prod", None).to_string(), &[])
            .await;
        assert_eq!((got_status, got_kind.as_str()), (status, kind));
        assert_eq!(got, body, "{}", text(&got));
    }
}
