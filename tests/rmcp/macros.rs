//! A server written with rmcp's `#[tool_router]` macros reads its plaintext
//! state through rmcp's `RequestState` extractor, unchanged, behind `StateSealed`.

use std::sync::Arc;

use rmcp::handler::server::tool::RequestState;
use rmcp::model::*;
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, ServiceError};
use rmcp::{ServiceExt, tool, tool_router};
use stateseal::boundary::Boundary;
use stateseal::rmcp_adapter::StateSealed;
use stateseal::{Envelope, KeyRing, RingHandle, Secret};

#[derive(Clone)]
struct Approvals;

#[tool_router(server_handler)]
impl Approvals {
    #[tool(name = "approve", description = "Asks once, then approves")]
    fn approve(&self, RequestState(state): RequestState) -> CallToolResponse {
        match state.as_deref() {
            Some("approve:pending") => {
                CallToolResult::success(vec![ContentBlock::text("approved")]).into()
            }
            _ => InputRequiredResult::from_request_state("approve:pending").into(),
        }
    }
}

#[tokio::test]
async fn macro_tools_read_plaintext_through_the_request_state_extractor() {
    let ring = Arc::new(RingHandle::new(
        KeyRing::from_secrets(&[Secret::generate().expect("rng")]).expect("ring"),
    ));
    let envelope = Envelope::builder(ring, Some("svc")).build().expect("env");
    let sealed = StateSealed::new(Approvals, Boundary::new(Arc::new(envelope)));
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        if let Ok(running) = sealed.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = ()
        .serve_with_lifecycle(
            client_io,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("client");
    let CallToolResponse::InputRequired(first) = client
        .call_tool_once(CallToolRequestParams::new("approve"))
        .await
        .expect("round 1")
    else {
        panic!("expected input_required")
    };
    let token = first.request_state.expect("state");
    assert!(
        token.starts_with("v1.") && !token.contains("pending"),
        "the wire carries a sealed token"
    );
    let done = client
        .call_tool_once(CallToolRequestParams::new("approve").with_request_state(&token))
        .await
        .expect("round 2");
    assert!(
        matches!(done, CallToolResponse::Complete(ref r) if format!("{r:?}").contains("approved")),
        "{done:?}"
    );
    // The handler never sees a forged plaintext: "approve:pending" typed by the client is refused.
    let forged = client
        .call_tool_once(CallToolRequestParams::new("approve").with_request_state("approve:pending"))
        .await;
    assert!(
        matches!(forged, Err(ServiceError::McpError(e)) if e.message == "Invalid or expired requestState")
    );
}
