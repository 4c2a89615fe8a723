use std::sync::{Arc, Mutex};

use rmcp::model::*;
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, RequestContext, RoleClient, RoleServer, RunningService,
    ServiceError,
};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use serde_json::json;
use stateseal::boundary::{Boundary, FailureMode, PrincipalResult};
use stateseal::rmcp_adapter::{PrincipalSource, StateSealed};
use stateseal::{
    AesGcmCodec, Clock, Envelope, KeyRing, ManualClock, Principal, RingHandle, Secret,
};
use stateseal_testkit::logs::Logs;

/// A tool, a prompt and a resource that each need one confirmation round.
#[derive(Clone, Default)]
pub(crate) struct Confirming {
    /// Every state a handler saw, for asserting what reached it.
    seen: Arc<Mutex<Vec<Option<String>>>>,
}

impl Confirming {
    fn round(
        &self,
        state: Option<String>,
        answered: bool,
        what: &str,
    ) -> Result<Option<String>, ()> {
        self.seen.lock().expect("lock").push(state.clone());
        match state {
            Some(s) if answered && s == format!("confirm:{what}") => Err(()),
            _ => Ok(Some(format!("confirm:{what}"))),
        }
    }
}

fn ask(state: String) -> InputRequiredResult {
    let req: InputRequest =
        serde_json::from_value(json!({"method": "elicitation/create", "params": {"message": "Sure?", "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}}))
            .expect("input request");
    InputRequiredResult::new(
        Some([("confirm".to_owned(), req)].into_iter().collect()),
        Some(state),
    )
}

impl ServerHandler for Confirming {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .enable_resources()
                .build(),
        )
    }
    async fn call_tool(
        &self,
        r: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let what = format!(
            "{}:{}",
            r.name,
            serde_json::to_string(&r.arguments).unwrap_or_default()
        );
        Ok(
            match self.round(r.request_state, r.input_responses.is_some(), &what) {
                Ok(Some(state)) => ask(state).into(),
                _ => {
                    CallToolResult::success(vec![ContentBlock::text(format!("done {what}"))]).into()
                }
            },
        )
    }
    async fn get_prompt(
        &self,
        r: GetPromptRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        Ok(
            match self.round(r.request_state, r.input_responses.is_some(), &r.name) {
                Ok(Some(state)) => ask(state).into(),
                _ => GetPromptResult::new(vec![PromptMessage::new_text(Role::User, "done")]).into(),
            },
        )
    }
    async fn read_resource(
        &self,
        r: ReadResourceRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        Ok(
            match self.round(r.request_state, r.input_responses.is_some(), &r.uri) {
                Ok(Some(state)) => ask(state).into(),
                _ => ReadResourceResult::new(vec![ResourceContents::text("done", r.uri.clone())])
                    .into(),
            },
        )
    }
}

/// The principal an auth layer would have established for this connection.
struct Fixed(Option<&'static str>);

impl PrincipalSource for Fixed {
    fn principal(&self, _: &RequestContext<RoleServer>) -> PrincipalResult {
        Ok(self
            .0
            .map(|s| Principal::from_components("client-1", Some("https://as.example"), Some(s))))
    }
}

struct Server {
    ring: Arc<RingHandle>,
    clock: Arc<ManualClock>,
    handler: Confirming,
}

impl Server {
    fn new(secrets: &[Secret]) -> Self {
        let ring = Arc::new(RingHandle::new(
            KeyRing::from_secrets(secrets).expect("ring"),
        ));
        Self {
            ring,
            clock: Arc::new(ManualClock::new(1_782_345_600.0)),
            handler: Confirming::default(),
        }
    }

    /// Connects a client to a fresh server instance sharing this ring, clock and handler.
    async fn connect(
        &self,
        audience: &str,
        principal: Option<&'static str>,
        mode: FailureMode,
    ) -> RunningService<RoleClient, ()> {
        let envelope = Envelope::builder(
            Arc::new(AesGcmCodec::new(self.ring.clone())),
            Some(audience),
        )
        .clock(self.clock.clone() as Arc<dyn Clock>)
        .build()
        .expect("envelope");
        let sealed = StateSealed::new(
            self.handler.clone(),
            Boundary::builder(Arc::new(envelope))
                .failure_mode(mode)
                .build(),
        )
        .with_principal_source(Fixed(principal));
        let (client_io, server_io) = tokio::io::duplex(1 << 16);
        tokio::spawn(async move {
            if let Ok(running) = sealed.serve(server_io).await {
                let _ = running.waiting().await;
            }
        });
        // The 2026-07-28 lifecycle (server/discover): input_required needs it.
        ().serve_with_lifecycle(
            client_io,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("client connects")
    }
}

fn tool(name: &str, args: serde_json::Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_owned())
        .with_arguments(args.as_object().cloned().unwrap_or_default())
}

async fn first_round(
    client: &RunningService<RoleClient, ()>,
    params: CallToolRequestParams,
) -> String {
    match client.call_tool_once(params).await.expect("round 1") {
        CallToolResponse::InputRequired(r) => r.request_state.expect("a state"),
        other => panic!("expected input_required, got {other:?}"),
    }
}

fn answered(params: CallToolRequestParams, state: &str) -> CallToolRequestParams {
    params.with_request_state(state).with_input_responses(
        [(
            "confirm".to_owned(),
            json!({"action": "accept", "content": {"ok": true}}),
        )]
        .into_iter()
        .collect(),
    )
}

fn assert_rejected(result: Result<CallToolResponse, ServiceError>) {
    match result {
        Err(ServiceError::McpError(e)) => {
            assert_eq!(e.code, ErrorCode(-32602));
            assert_eq!(e.message, "Invalid or expired requestState");
            assert_eq!(e.data, Some(json!({"reason": "invalid_request_state"})));
        }
        other => panic!("expected the frozen -32602, got {other:?}"),
    }
}

fn secret(b: u8) -> Secret {
    Secret::new(vec![b; 32]).expect("secret")
}

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
    server.clock.advance(601.0);
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
