//! Serves every fixture the MCP conformance suite's `input-required-result-*`
//! server scenarios call, behind the stateseal boundary, over streamable HTTP.
//!
//! With `--no-sealing` it serves the same fixtures with no boundary at all:
//! the server that `stateseal proxy` is put in front of in
//! `scripts/conformance.sh` (and, alone, the control that fails
//! `input-required-result-tampered-state`).
//!
//! ```sh
//! cargo run --example conformance_server -- --addr 127.0.0.1:3000 [--failure-mode reject|treat-as-absent] [--no-sealing]
//! npx @modelcontextprotocol/conformance server --url http://127.0.0.1:3000/mcp --scenario input-required-result-tampered-state
//! ```

#[path = "fixtures/conformance_handler.rs"]
mod conformance_handler;

use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use stateseal::boundary::{Boundary, FailureMode};
use stateseal::rmcp_adapter::StateSealed;
use stateseal::{Envelope, KeyRing, RingHandle};

fn usage() -> ! {
    eprintln!(
        "usage: conformance_server [--addr 127.0.0.1:PORT] [--failure-mode reject|treat-as-absent] [--no-sealing]"
    );
    std::process::exit(2)
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(tracing::Level::WARN)
        .init();
    let mut addr = "127.0.0.1:3000".to_owned();
    let mut mode = FailureMode::Reject;
    let mut sealing = true;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--no-sealing" {
            sealing = false;
            continue;
        }
        match (flag.as_str(), args.next()) {
            ("--addr", Some(a)) => addr = a,
            ("--failure-mode", Some(m)) if m == "reject" => mode = FailureMode::Reject,
            ("--failure-mode", Some(m)) if m == "treat-as-absent" => {
                mode = FailureMode::TreatAsAbsent
            }
            _ => usage(),
        }
    }
    // A process-local key is right for a single conformance server; fleets share a keyset.
    let ring = Arc::new(RingHandle::new(
        KeyRing::ephemeral().map_err(std::io::Error::other)?,
    ));
    let envelope = Envelope::builder(ring, Some("stateseal-conformance"))
        .build()
        .map_err(std::io::Error::other)?;
    let boundary = Boundary::builder(Arc::new(envelope))
        .failure_mode(mode)
        .build();
    let router = if sealing {
        routes(StateSealed::new(
            conformance_handler::ConformanceFixtures,
            boundary,
        ))
    } else {
        routes(conformance_handler::ConformanceFixtures)
    };
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!(
        "conformance server listening on http://{}/mcp{}",
        listener.local_addr()?,
        if sealing { "" } else { " (no sealing)" }
    );
    axum::serve(listener, router).await
}

/// The fixtures served over streamable HTTP at `/mcp`.
fn routes<H: rmcp::ServerHandler + Clone + Send + Sync + 'static>(handler: H) -> axum::Router {
    let service = StreamableHttpService::new(
        move || Ok(handler.clone()),
        LocalSessionManager::default().into(),
        StreamableHttpServerConfig::default(),
    );
    axum::Router::new().nest_service("/mcp", service)
}
