//! The demo's fleet: rmcp servers on loopback sharing one keyset and one
//! replay store, a client per user and instance, and the calls they make.

use std::sync::Arc;

use rmcp::model::*;
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService, ServiceError,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;
use stateseal::replay::{MemoryReplayStore, ReplayStore};
use stateseal::rmcp_adapter::StateSealed;
use stateseal::setup::{Config, Protection, start};

use super::{USERS, bearer_auth, confirming, fail};
use crate::error::CliError;
use crate::keyset::registry;

type Client = RunningService<RoleClient, ()>;

pub(super) struct Fleet {
    pub(super) protections: Vec<Protection>,
    /// `clients[user][instance]`
    pub(super) clients: Vec<Vec<Client>>,
}

/// The fleet's shared replay store: one process here, so one memory store
/// registered under a scheme of the demo's own (a real fleet names Redis).
pub(super) const REPLAY_STORE: &str = "demo://fleet";

pub(super) async fn launch(config: &Config, instances: usize) -> Result<Fleet, CliError> {
    let mut protections = Vec::new();
    let mut urls = Vec::new();
    let replays: Arc<dyn ReplayStore> = Arc::new(MemoryReplayStore::new());
    for _ in 0..instances {
        let mut registry = registry(&config.store);
        let shared = Arc::clone(&replays);
        registry.register_replay_store("demo", move |_, _| Ok(Arc::clone(&shared)));
        let protection = start(config, registry)
            .await
            .map_err(|e| fail("starting an instance")(e.to_string()))?;
        let router = bearer_auth::mcp_router(StateSealed::new(
            confirming::Confirming,
            protection.boundary(),
        ));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| fail("binding")(e.to_string()))?;
        urls.push(format!(
            "http://{}/mcp",
            listener
                .local_addr()
                .map_err(|e| fail("address")(e.to_string()))?
        ));
        tokio::spawn(async move { axum::serve(listener, router).await });
        protections.push(protection);
    }
    let mut clients = Vec::new();
    for user in USERS {
        let mut row = Vec::new();
        for url in &urls {
            let transport = StreamableHttpClientTransport::from_config(
                StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .auth_header(format!("{user}-token")),
            );
            let client = ()
                .serve_with_lifecycle(
                    transport,
                    ClientLifecycleMode::Discover {
                        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                    },
                )
                .await
                .map_err(|e| fail("connecting a client")(e.to_string()))?;
            row.push(client);
        }
        clients.push(row);
    }
    Ok(Fleet {
        protections,
        clients,
    })
}

pub(super) fn transfer(amount: u32) -> CallToolRequestParams {
    CallToolRequestParams::new("transfer").with_arguments(
        json!({"amount": amount})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    )
}

pub(super) fn deploy(env: &str) -> CallToolRequestParams {
    CallToolRequestParams::new("deploy")
        .with_arguments(json!({"env": env}).as_object().cloned().unwrap_or_default())
}

pub(super) fn answered(params: CallToolRequestParams, token: &str) -> CallToolRequestParams {
    params.with_request_state(token).with_input_responses(
        [(
            "confirm".to_owned(),
            json!({"action": "accept", "content": {"ok": true}}),
        )]
        .into_iter()
        .collect(),
    )
}

pub(super) fn rejected(r: &Result<CallToolResponse, ServiceError>) -> bool {
    matches!(r, Err(ServiceError::McpError(e)) if e.code == ErrorCode(-32602) && e.message == "Invalid or expired requestState")
}
