use std::sync::Arc;

use serde_json::json;
use stateseal::replay::MemoryReplayStore;
use stateseal::{Envelope, KeyRing, RingHandle, RingKey, Secret, TokenFormat};

use super::*;

fn boundary() -> Boundary {
    let key = RingKey::with_format(&Secret::generate().expect("secret"), TokenFormat::V2);
    let ring = Arc::new(RingHandle::new(
        KeyRing::from_keys(vec![Arc::new(key)]).expect("ring"),
    ));
    let envelope = Envelope::builder(ring, Some("svc"))
        .build()
        .expect("envelope");
    Boundary::builder(Arc::new(envelope))
        .replay_store(Arc::new(MemoryReplayStore::new()))
        .single_use("tools/call", "transfer")
        .build()
}

/// A sealed state for `tools/call` of `name` with `arguments`, as the proxy seals a result.
fn sealed(b: &Boundary, name: &str, arguments: Value, plaintext: &str) -> String {
    let mut params = json!({"name": name, "arguments": arguments});
    let round = b
        .open_params("tools/call", &mut params, &Ok(None))
        .expect("first round");
    let mut result = json!({"resultType": "input_required", "requestState": plaintext});
    b.seal_result(&round, &mut result, &Ok(None))
        .expect("sealed");
    result["requestState"].as_str().expect("a token").to_owned()
}

fn call(id: Value, name: &str, arguments: Value, state: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": arguments, "requestState": state}})
}

async fn open(b: &Boundary, body: &Value) -> Inbound {
    open_body(
        b,
        &serde_json::to_vec(body).unwrap(),
        &Ok(None),
        &Mirrored::default(),
    )
    .await
}

fn answered(inbound: Inbound) -> Value {
    match inbound {
        Inbound::Answer(body) => serde_json::from_slice(&body).expect("JSON"),
        other => panic!("not answered: {other:?}"),
    }
}

const REFUSED: &str = "Invalid or expired requestState";

#[tokio::test]
async fn a_verified_echo_goes_upstream_as_the_plaintext_it_was() {
    let b = boundary();
    let token = sealed(&b, "deploy", json!({"env": "prod"}), "step-2");
    let Inbound::Forward {
        body,
        rounds,
        answers,
        ..
    } = open(
        &b,
        &call(json!(7), "deploy", json!({"env": "prod"}), json!(token)),
    )
    .await
    else {
        panic!("not forwarded")
    };
    let body: Value = serde_json::from_slice(&body.expect("changed")).unwrap();
    assert_eq!(body["params"]["requestState"], "step-2");
    assert!(!serde_json::to_string(&body).unwrap().contains(&token));
    assert!(answers.is_empty());
    // The result answering id 7 (or 7.0, as JavaScript reads it) is sealed under this round.
    assert!(rounds.get(&json!(7)).is_some() && rounds.get(&json!(7.0)).is_some());
    assert!(rounds.get(&json!("7")).is_none());
}

#[tokio::test]
async fn what_is_not_a_carrier_or_echoes_nothing_goes_as_it_came() {
    let b = boundary();
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "result": {}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "deploy"}}),
    ] {
        let Inbound::Forward { body, answers, .. } = open(&b, &message).await else {
            panic!("{message}")
        };
        assert_eq!(body, None, "{message}");
        assert!(answers.is_empty());
    }
}

#[tokio::test]
async fn a_bad_echo_is_answered_here_with_the_frozen_error() {
    let b = boundary();
    let token = sealed(&b, "deploy", json!({"env": "prod"}), "step-2");
    let mut tampered = token.clone();
    tampered.pop();
    tampered.push(if token.ends_with('A') { 'B' } else { 'A' });
    for (what, message) in [
        (
            "tampered",
            call(
                json!("a"),
                "deploy",
                json!({"env": "prod"}),
                json!(tampered),
            ),
        ),
        (
            "other arguments",
            call(json!("a"), "deploy", json!({"env": "dev"}), json!(token)),
        ),
        (
            "not a string",
            call(
                json!("a"),
                "deploy",
                json!({"env": "prod"}),
                json!({"s": 1}),
            ),
        ),
        (
            "garbage",
            call(
                json!("a"),
                "deploy",
                json!({"env": "prod"}),
                json!("v2.nope"),
            ),
        ),
    ] {
        let response = answered(open(&b, &message).await);
        assert_eq!(response["id"], "a", "{what}");
        assert_eq!(response["error"]["code"], -32602, "{what}");
        assert_eq!(response["error"]["message"], REFUSED, "{what}");
        assert_eq!(
            response["error"]["data"],
            json!({"reason": "invalid_request_state"}),
            "{what}"
        );
    }
}

#[tokio::test]
async fn a_single_use_state_is_accepted_once() {
    let b = boundary();
    let token = sealed(&b, "transfer", json!({"to": "x"}), "confirm");
    let message = call(json!(1), "transfer", json!({"to": "x"}), json!(token));
    assert!(matches!(
        open(&b, &message).await,
        Inbound::Forward { body: Some(_), .. }
    ));
    let again = answered(open(&b, &message).await);
    assert_eq!(again["error"]["message"], REFUSED);
}

#[tokio::test]
async fn a_batch_sends_on_what_passed_and_answers_what_did_not() {
    let b = boundary();
    let good = sealed(&b, "deploy", json!({}), "two");
    let batch = json!([
        call(json!(1), "deploy", json!({}), json!(good)),
        call(json!(2), "deploy", json!({}), json!("v2.forged")),
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}},
        call(Value::Null, "deploy", json!({}), json!("v2.forged")).as_object().map(|o| {
            let mut o = o.clone();
            o.remove("id");
            Value::Object(o)
        }).unwrap(),
        {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
    ]);
    let Inbound::Forward {
        body,
        rounds,
        answers,
        ..
    } = open(&b, &batch).await
    else {
        panic!("not forwarded")
    };
    let sent: Value = serde_json::from_slice(&body.expect("changed")).unwrap();
    let sent = sent.as_array().unwrap();
    // The refused request and the refused notification never reach the upstream.
    assert_eq!(sent.len(), 3);
    assert_eq!(sent[0]["params"]["requestState"], "two");
    assert_eq!(sent[1]["method"], "notifications/progress");
    assert_eq!(sent[2]["id"], 3);
    assert!(!serde_json::to_string(sent).unwrap().contains("v2.forged"));
    assert_eq!(answers.len(), 1);
    assert_eq!(
        (
            answers[0]["id"].clone(),
            answers[0]["error"]["code"].clone()
        ),
        (json!(2), json!(-32602))
    );
    assert_eq!(rounds.len(), 1);
    // Everything refused: the proxy answers the whole batch itself.
    let all_bad = json!([
        call(json!(5), "deploy", json!({}), json!("v2.x")),
        call(json!(6), "deploy", json!({}), json!("v2.y"))
    ]);
    let response = answered(open(&b, &all_bad).await);
    assert_eq!(response.as_array().map(Vec::len), Some(2));
}

#[tokio::test]
async fn two_carriers_with_one_id_are_refused_whole() {
    let b = boundary();
    // 1 and 1.0 are one id to a JavaScript client.
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "a"}},
        {"jsonrpc": "2.0", "id": 1.0, "method": "tools/call", "params": {"name": "b"}},
    ]);
    let response = answered(open(&b, &batch).await);
    assert_eq!(response["error"]["code"], -32600);
    assert_eq!(response["id"], Value::Null);
}

#[tokio::test]
async fn a_body_that_is_not_json_never_goes_upstream() {
    let b = boundary();
    // Python's json reads NaN; serde does not: nobody could have verified its state.
    for body in [
        &b"{\"jsonrpc\":\"2.0\",\"id\":NaN,\"method\":\"tools/call\"}"[..],
        b"",
        b"[",
        b"\xff",
    ] {
        let response = answered(open_body(&b, body, &Ok(None), &Mirrored::default()).await);
        assert_eq!(response["error"]["code"], -32700, "{body:?}");
        assert_eq!(response["id"], Value::Null);
    }
    let response = answered(open_body(&b, b"[]", &Ok(None), &Mirrored::default()).await);
    assert_eq!(response["error"]["code"], -32600);
}

#[tokio::test]
async fn a_member_named_twice_never_goes_upstream() {
    let b = boundary();
    let token = sealed(&b, "deploy", json!({"env": "prod"}), "step-2");
    // Each is read one way here and could be read the other way upstream
    // (a parser that keeps the first copy): a forged state, or a method
    // this proxy would not have verified, or arguments it did not bind.
    for body in [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deploy","requestState":"forged","requestState":null}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"tools/list","params":{"name":"deploy","requestState":"forged"}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deploy","requestState":"forged"},"params":{"name":"deploy"}}"#.to_owned(),
        r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deploy","request\u0053tate":"forged","requestState":null}}]"#.to_owned(),
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"deploy","arguments":{{"env":"dev","env":"prod"}},"requestState":"{token}"}}}}"#),
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"rm","name":"deploy","arguments":{{"env":"prod"}},"requestState":"{token}"}}}}"#),
    ] {
        let response = answered(open_body(&b, body.as_bytes(), &Ok(None), &Mirrored::default()).await);
        assert_eq!(response["error"]["code"], -32600, "{body}");
        assert_eq!(response["id"], Value::Null, "{body}");
    }
}

#[tokio::test]
async fn a_member_spelled_so_a_case_insensitive_server_reads_it_never_goes_upstream() {
    let b = boundary();
    let token = sealed(&b, "deploy", json!({"env": "prod"}), "step-2");
    // Go's encoding/json reads each as the member it spells another way: a
    // state nobody verified, a method that is a carrier, another target.
    for body in [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deploy","RequestState":"forged"}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deploy","requeſtState":"forged"}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","Method":"tools/call","params":{"name":"deploy","requestState":"forged"}}"#.to_owned(),
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"deploy","Name":"rm","arguments":{{"env":"prod"}},"requestState":"{token}"}}}}"#),
        format!(r#"[{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"deploy","arguments":{{"env":"prod"}},"Arguments":{{"env":"dev"}},"requestState":"{token}"}}}}]"#),
    ] {
        let response = answered(open_body(&b, body.as_bytes(), &Ok(None), &Mirrored::default()).await);
        assert_eq!(response["error"]["code"], -32600, "{body}");
        assert_eq!(response["id"], Value::Null, "{body}");
    }
    // The same names inside arguments are the tool's own.
    let fine = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"deploy","arguments":{{"Name":"x","RequestState":"y"}},"requestState":"{token}"}}}}"#
    );
    let response = answered(open_body(&b, fine.as_bytes(), &Ok(None), &Mirrored::default()).await);
    assert_eq!(
        response["error"]["code"], -32602,
        "verified, and refused as a state for other arguments"
    );
}

#[tokio::test]
async fn headers_that_do_not_mirror_the_body_are_refused_before_a_single_use_state_is_spent() {
    let b = boundary();
    let token = sealed(&b, "transfer", json!({"to": "bob"}), "step-2");
    let body = serde_json::to_vec(&call(
        json!(5),
        "transfer",
        json!({"to": "bob"}),
        json!(token),
    ))
    .expect("JSON");
    let mirrored = |name: &str| {
        let mut h = http::HeaderMap::new();
        h.insert("mcp-protocol-version", "2026-07-28".parse().expect("value"));
        h.insert("mcp-method", "tools/call".parse().expect("value"));
        h.insert("mcp-name", name.parse().expect("value"));
        Mirrored::of(&h)
    };
    // A gateway let `lookup` through; the body runs `transfer`.
    let response = answered(open_body(&b, &body, &Ok(None), &mirrored("lookup")).await);
    assert_eq!(response["error"]["code"], HEADER_MISMATCH);
    assert_eq!(response["id"], 5);
    assert_eq!(
        response["error"]["message"],
        "Header mismatch: the Mcp-Name header does not match the body"
    );
    // The state was not spent: with headers that agree it goes on, once.
    let Inbound::Forward { body: sent, .. } =
        open_body(&b, &body, &Ok(None), &mirrored("transfer")).await
    else {
        panic!("a single-use state refused for headers was spent");
    };
    let sent: Value = serde_json::from_slice(&sent.expect("changed")).expect("JSON");
    assert_eq!(sent["params"]["requestState"], "step-2");
    let again = answered(open_body(&b, &body, &Ok(None), &mirrored("transfer")).await);
    assert_eq!(again["error"]["message"], REFUSED, "single use");
}
