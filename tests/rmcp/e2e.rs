//! Conversations end to end through rmcp: the handler sees only plaintext,
//! every misuse gets the frozen error and a clean log, a rotation between
//! rounds rejects nothing, and a seal failure never answers with plaintext.

use rmcp::model::*;
use rmcp::service::ServiceError;
use serde_json::json;
use stateseal::KeyRing;
use stateseal::boundary::FailureMode;
use stateseal_testkit::logs::Logs;
use std::time::Duration;

use crate::conversation::{Server, answered, assert_rejected, first_round, secret, tool};

#[tokio::test]
async fn multi_round_conversation_handler_sees_only_plaintext() {
    let server = Server::new(&[secret(1)]);
    let client = server
        .connect("svc", Some("alice"), FailureMode::Reject)
        .await;
    let params = tool("deploy", json!({"env": "prod"}));
    let token = first_round(&client, params.clone()).await;
    assert!(token.starts_with("v1."), "the wire carries a sealed token");
    assert!(!token.contains("confirm"));
    match client
        .call_tool_once(answered(params, &token))
        .await
        .expect("round 2")
    {
        CallToolResponse::Complete(r) => assert!(format!("{r:?}").contains("done deploy")),
        other => panic!("{other:?}"),
    }
    let seen = server.handler.seen.lock().expect("lock").clone();
    assert_eq!(
        seen,
        vec![None, Some(r#"confirm:deploy:{"env":"prod"}"#.to_owned())]
    );
    // Prompts and resources are carriers too.
    let prompt = client
        .get_prompt_once(GetPromptRequestParams::new("brief"))
        .await
        .expect("prompt");
    let GetPromptResponse::InputRequired(r) = prompt else {
        panic!("prompt round 1")
    };
    let state = r.request_state.expect("state");
    let done = client
        .get_prompt_once(
            GetPromptRequestParams::new("brief")
                .with_request_state(&state)
                .with_input_responses(Default::default()),
        )
        .await
        .expect("prompt round 2");
    assert!(matches!(done, GetPromptResponse::Complete(_)));
    let res = client
        .read_resource_once(ReadResourceRequestParams::new("file:///a"))
        .await
        .expect("read");
    let ReadResourceResponse::InputRequired(r) = res else {
        panic!("resource round 1")
    };
    let done = client
        .read_resource_once(
            ReadResourceRequestParams::new("file:///a")
                .with_request_state(r.request_state.expect("s"))
                .with_input_responses(Default::default()),
        )
        .await
        .expect("read round 2");
    assert!(matches!(done, ReadResourceResponse::Complete(_)));
}

#[tokio::test]
async fn every_misuse_is_rejected_with_the_frozen_error_and_a_clean_log() {
    let logs = Logs::default();
    let _guard = logs.capture();
    let server = Server::new(&[secret(1)]);
    let alice = server
        .connect("svc", Some("alice"), FailureMode::Reject)
        .await;
    let bob = server
        .connect("svc", Some("bob"), FailureMode::Reject)
        .await;
    let other_service = server
        .connect("billing", Some("alice"), FailureMode::Reject)
        .await;
    let params = tool("deploy", json!({"env": "prod"}));
    let token = first_round(&alice, params.clone()).await;

    let mid = token.len() / 2;
    let tampered = format!(
        "{}{}{}",
        &token[..mid],
        if &token[mid..=mid] == "A" { "B" } else { "A" },
        &token[mid + 1..]
    );
    assert_rejected(
        alice
            .call_tool_once(answered(params.clone(), &tampered))
            .await,
    );
    assert_rejected(
        alice
            .call_tool_once(answered(tool("rollback", json!({"env": "prod"})), &token))
            .await,
    );
    assert_rejected(
        alice
            .call_tool_once(answered(tool("deploy", json!({"env": "staging"})), &token))
            .await,
    );
    let other_method = alice
        .read_resource_once(ReadResourceRequestParams::new("deploy").with_request_state(&token))
        .await;
    match other_method {
        Err(ServiceError::McpError(e)) => {
            assert_eq!(
                (e.code, e.message.as_ref()),
                (ErrorCode(-32602), "Invalid or expired requestState")
            );
            assert_eq!(e.data, Some(json!({"reason": "invalid_request_state"})));
        }
        other => panic!("expected the frozen -32602, got {other:?}"),
    }
    assert_rejected(bob.call_tool_once(answered(params.clone(), &token)).await);
    assert_rejected(
        other_service
            .call_tool_once(answered(params.clone(), &token))
            .await,
    );
    server.clock.advance(Duration::from_secs(601));
    assert_rejected(alice.call_tool_once(answered(params.clone(), &token)).await);

    let log = logs.text();
    for reason in [
        "reason=\"seal\"",
        "reason=\"request binding\"",
        "reason=\"principal\"",
        "reason=\"audience\"",
        "reason=\"expired\"",
    ] {
        assert!(log.contains(reason), "log lacks {reason}:\n{log}");
    }
    for secret_text in [
        token.as_str(),
        &token[3..24],
        "confirm:deploy",
        "alice",
        "bob",
        "client-1",
    ] {
        assert!(
            !log.contains(secret_text),
            "{secret_text:?} leaked into the log:\n{log}"
        );
    }
    // No handler ever saw a rejected state.
    assert_eq!(server.handler.seen.lock().expect("lock").len(), 1);
}

#[tokio::test]
async fn rotation_between_rounds_rejects_nothing() {
    let server = Server::new(&[secret(1), secret(2)]);
    let client = server.connect("svc", None, FailureMode::Reject).await;
    let params = tool("deploy", json!({}));
    // Phase 1 [old, new] minted; phase 2 [new, old] verifies it.
    let token = first_round(&client, params.clone()).await;
    server
        .ring
        .store(KeyRing::from_secrets(&[secret(2), secret(1)]).expect("ring"));
    let r = client
        .call_tool_once(answered(params.clone(), &token))
        .await
        .expect("phase 2");
    assert!(matches!(r, CallToolResponse::Complete(_)));
    // Phase 3 [new]: a state minted under the old key is gone.
    server
        .ring
        .store(KeyRing::from_secrets(&[secret(2)]).expect("ring"));
    assert_rejected(client.call_tool_once(answered(params, &token)).await);
}

#[tokio::test]
async fn treat_as_absent_runs_a_fresh_round() {
    let logs = Logs::default();
    let _guard = logs.capture();
    let server = Server::new(&[secret(1)]);
    let client = server
        .connect("svc", None, FailureMode::TreatAsAbsent)
        .await;
    let params = tool("deploy", json!({}));
    let r = client
        .call_tool_once(answered(params, "v1.forged-by-the-client"))
        .await
        .expect("fresh round");
    assert!(
        matches!(r, CallToolResponse::InputRequired(_)),
        "the handler started over"
    );
    assert_eq!(
        server.handler.seen.lock().expect("lock").clone(),
        vec![None]
    );
    assert!(logs.text().contains("treating it as absent"));
}

#[tokio::test]
async fn a_seal_failure_answers_internal_error_and_never_plaintext() {
    let server = Server::new(&[secret(1)]);
    server.ring.clear(); // not ready: nothing can be sealed
    let client = server.connect("svc", None, FailureMode::Reject).await;
    match client.call_tool_once(tool("deploy", json!({}))).await {
        Err(ServiceError::McpError(e)) => {
            assert_eq!(
                (e.code, e.message.as_ref(), e.data),
                (ErrorCode(-32603), "Internal error", None)
            );
        }
        other => panic!("expected -32603, got {other:?}"),
    }
}
