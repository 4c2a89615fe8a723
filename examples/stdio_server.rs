//! The same multi-round tool over stdio: one process, one client, no
//! authenticated principal (states are unbound), a process-local key.
//!
//! ```sh
//! cargo run --example stdio_server   # speak MCP on stdin/stdout
//! ```

#[path = "../cli/src/demo/confirming.rs"]
mod confirming;

use std::sync::Arc;

use rmcp::ServiceExt;
use stateseal::boundary::Boundary;
use stateseal::rmcp_adapter::StateSealed;
use stateseal::{Envelope, KeyRing, RingHandle};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    // Logs go to stderr: stdout carries the protocol.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(tracing::Level::WARN)
        .init();
    let ring = Arc::new(RingHandle::new(
        KeyRing::ephemeral().map_err(std::io::Error::other)?,
    ));
    let envelope = Envelope::builder(ring, Some("stateseal-example"))
        .build()
        .map_err(std::io::Error::other)?;
    let handler = StateSealed::new(confirming::Confirming, Boundary::new(Arc::new(envelope)));
    let running = handler
        .serve((tokio::io::stdin(), tokio::io::stdout()))
        .await
        .map_err(std::io::Error::other)?;
    running.waiting().await.map_err(std::io::Error::other)?;
    Ok(())
}
