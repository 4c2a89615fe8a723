//! What the end-to-end tests converse through: a server whose tool, prompt
//! and resource each ask for one confirmation (`Confirming`, recording every
//! state its handlers saw), served behind `StateSealed` to a real rmcp client
//! over an in-process transport, and the calls and checks they make.

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
use stateseal::{Clock, Envelope, KeyRing, ManualClock, Principal, RingHandle, Secret, UnixTime};

/// A tool, a prompt and a resource that each need one confirmation round.
#[derive(Clone, Default)]
pub(crate) struct Confirming {
    /// Every state a handler saw, for asserting what reached it.
    pub(crate) seen: Arc<Mutex<Vec<Option<String>>>>,
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
pub(crate) struct Fixed(Option<&'static str>);

impl PrincipalSource for Fixed {
    fn principal(&self, _: &RequestContext<RoleServer>) -> PrincipalResult {
        Ok(self
            .0
            .map(|s| Principal::from_components("client-1", Some("https://as.example"), Some(s))))
    }
}

pub(crate) struct Server {
    pub(crate) ring: Arc<RingHandle>,
    pub(crate) clock: Arc<ManualClock>,
    pub(crate) handler: Confirming,
}

impl Server {
    pub(crate) fn new(secrets: &[Secret]) -> Self {
        let ring = Arc::new(RingHandle::new(
            KeyRing::from_secrets(secrets).expect("ring"),
        ));
        Self {
            ring,
            clock: Arc::new(ManualClock::new(UnixTime::from_secs(1_782_345_600))),
            handler: Confirming::default(),
        }
    }

    /// Connects a client to a fresh server instance sharing this ring, clock and handler.
    pub(crate) async fn connect(
        &self,
        audience: &str,
        principal: Option<&'static str>,
        mode: FailureMode,
    ) -> RunningService<RoleClient, ()> {
        let envelope = Envelope::builder(self.ring.clone(), Some(audience))
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

pub(crate) fn tool(name: &str, args: serde_json::Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_owned())
        .with_arguments(args.as_object().cloned().unwrap_or_default())
}

pub(crate) async fn first_round(
    client: &RunningService<RoleClient, ()>,
    params: CallToolRequestParams,
) -> String {
    match client.call_tool_once(params).await.expect("round 1") {
        CallToolResponse::InputRequired(r) => r.request_state.expect("a state"),
        other => panic!("expected input_required, got {other:?}"),
    }
}

pub(crate) fn answered(params: CallToolRequestParams, state: &str) -> CallToolRequestParams {
    params.with_request_state(state).with_input_responses(
        [(
            "confirm".to_owned(),
            json!({"action": "accept", "content": {"ok": true}}),
        )]
        .into_iter()
        .collect(),
    )
}

pub(crate) fn assert_rejected(result: Result<CallToolResponse, ServiceError>) {
    match result {
        Err(ServiceError::McpError(e)) => {
            assert_eq!(e.code, ErrorCode(-32602));
            assert_eq!(e.message, "Invalid or expired requestState");
            assert_eq!(e.data, Some(json!({"reason": "invalid_request_state"})));
        }
        other => panic!("expected the frozen -32602, got {other:?}"),
    }
}

pub(crate) fn secret(b: u8) -> Secret {
    Secret::new(vec![b; 32]).expect("secret")
}
