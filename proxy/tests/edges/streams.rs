//! Event streams: every byte without a state passes as it came (a BOM, CR,
//! LF and CRLF line ends, comments and heartbeats, `id` and `retry`,
//! multi-line `data`), in whatever chunks the upstream writes; the state in
//! the stream's last event is sealed under the request it answers; a stream
//! resumed with `GET` is sealed under the round its answer belongs to.

use serde_json::{Value, json};

use super::{Reply, Rig, asks, call, events, text};

/// Everything before the answer: the parts of a stream no proxy may touch.
const PREFIX: &[u8] = b"\xEF\xBB\xBF: heartbeat\r\n\r\nretry: 1500\nid: 4\n\n: another\r\
event: message\r\ndata: {\"jsonrpc\":\"2.0\",\r\ndata: \"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\r\n\r\n";

fn stream_with_answer(state: &str) -> Vec<u8> {
    let answer = asks(json!(1), json!(state)).to_string();
    let mut body = PREFIX.to_vec();
    body.extend_from_slice(format!("id: 9\r\nevent: message\r\ndata: {answer}\r\n\r\n").as_bytes());
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_byte_without_a_state_passes_and_the_last_event_is_sealed_in_any_chunking() {
    for size in [1, 3, 7, 64, 4096] {
        let rig =
            Rig::new(move |_| Reply::sse(&stream_with_answer("confirm-deploy:prod"), size)).await;
        let (status, kind, body) = rig
            .post(call(json!(1), "prod", None).to_string(), &[])
            .await;
        assert_eq!(
            (status.as_u16(), kind.as_str()),
            (200, "text/event-stream"),
            "{size}"
        );
        assert!(
            body.starts_with(PREFIX),
            "chunks of {size}: {}",
            text(&body)
        );
        let last = &body[PREFIX.len()..];
        assert!(
            last.starts_with(b"id: 9\r\nevent: message\r\ndata: "),
            "{}",
            text(last)
        );
        assert!(last.ends_with(b"\r\n\r\n"), "{}", text(last));
        assert!(
            !text(&body).contains("confirm-deploy"),
            "plaintext went out: {}",
            text(&body)
        );
        let answer = events(last).pop().expect("the answer");
        let token = answer["result"]["requestState"].as_str().expect("a state");
        assert!(
            rig.opens(token, "prod", "confirm-deploy:prod"),
            "sealed for the request it answers"
        );
        assert!(
            !rig.opens(token, "staging", "confirm-deploy:prod"),
            "and for no other"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_with_no_state_passes_byte_for_byte() {
    let mut body = PREFIX.to_vec();
    body.extend_from_slice(b"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n\n");
    let sent = body.clone();
    let rig = Rig::new(move |_| Reply::sse(&sent, 5)).await;
    let (_, _, got) = rig
        .post(call(json!(1), "prod", None).to_string(), &[])
        .await;
    assert_eq!(got, body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_whose_data_is_not_json_is_dropped_and_the_rest_goes_on() {
    // NaN is no JSON, but Python's json (and pydantic) would read it: nobody sealed that state.
    let body = b"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"resultType\":\"input_required\",\"requestState\":\"plain-secret\",\"x\":NaN}}\n\n\
data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n";
    let rig = Rig::new(move |_| Reply::sse(body, 4096)).await;
    let (_, _, got) = rig
        .post(call(json!(1), "prod", None).to_string(), &[])
        .await;
    let rest = "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n";
    assert!(text(&got).starts_with(rest), "{}", text(&got));
    assert!(!text(&got).contains("plain-secret"));
    // The request the dropped event may have answered is told so when the stream ends.
    assert_eq!(
        events(&got[rest.len()..]),
        vec![
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32000, "message": "upstream MCP server sent an event that is not JSON"}})
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_stream_is_sealed_under_the_round_of_the_request_it_answers() {
    let rig = Rig::new(|seen| {
        if seen.method == http::Method::POST {
            // The POST's stream ends before its answer (the server will replay it).
            Reply::sse(b"id: 1\ndata: \n\n", 4096)
        } else {
            let last = seen
                .headers
                .get("last-event-id")
                .map(|v| v.to_str().expect("ascii").to_owned());
            assert_eq!(last.as_deref(), Some("1"), "Last-Event-ID goes upstream");
            let mut body = format!(
                "id: 2\ndata: {}\n\n",
                asks(json!(1), json!("confirm-deploy:prod"))
            )
            .into_bytes();
            body.extend_from_slice(
                format!("id: 3\ndata: {}\n\n", asks(json!(77), json!("stray"))).as_bytes(),
            );
            Reply::sse(&body, 4096)
        }
    })
    .await;
    let session = [("mcp-session-id", "s-1")];
    let (_, _, first) = rig
        .post(call(json!(1), "prod", None).to_string(), &session)
        .await;
    assert_eq!(
        first,
        b"id: 1\ndata: \n\n".to_vec(),
        "a priming event passes"
    );
    let (status, body) = rig
        .get(&[("mcp-session-id", "s-1"), ("last-event-id", "1")])
        .await;
    assert_eq!(status.as_u16(), 200);
    let answers = events(&body);
    let token = answers[0]["result"]["requestState"]
        .as_str()
        .expect("sealed");
    assert!(rig.opens(token, "prod", "confirm-deploy:prod"));
    // An answer to a request this proxy never opened cannot be sealed: an error, no plaintext.
    assert_eq!(
        answers[1],
        json!({"jsonrpc": "2.0", "id": 77, "error": {"code": -32603, "message": "Internal error"}})
    );
    assert!(!text(&body).contains("stray") && !text(&body).contains("confirm-deploy"));
    assert_eq!(rig.seen().len(), 2);
    // Taken once: a second replay of the same answer is refused too.
    let (_, again) = rig
        .get(&[("mcp-session-id", "s-1"), ("last-event-id", "1")])
        .await;
    assert_eq!(events(&again)[0]["error"]["code"], Value::from(-32603));
}
