//! `/mcp`: an rmcp handler served over streamable HTTP (rmcp's local
//! sessions), without an auth layer: the caller adds its own — the demo its
//! fixed-token stand-in, the example servers OAuth access tokens.
//!
//! The demo's own; the example servers and the rmcp tests reuse it (`#[path]`).

/// `/mcp` serving `handler`, with no auth layer.
pub(crate) fn mcp_routes<H>(handler: H) -> axum::Router
where
    H: rmcp::ServerHandler + Clone + Send + Sync + 'static,
{
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let service = StreamableHttpService::new(
        move || Ok(handler.clone()),
        LocalSessionManager::default().into(),
        StreamableHttpServerConfig::default(),
    );
    axum::Router::new().nest_service("/mcp", service)
}
