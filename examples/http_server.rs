//! A streamable-HTTP rmcp server (axum) whose multi-round tool, prompt and
//! resource are protected by the stateseal boundary, with a bearer-token
//! auth layer that maps tokens to principals (states are bound to the caller).
//!
//! ```sh
//! cargo run --example http_server -- --addr 127.0.0.1:8080                      # process-local key
//! cargo run --example http_server -- --addr 127.0.0.1:8080 --keyset file:///tmp/ks/keyset.json
//! ```
//! Bearer tokens: `alice-token` and `bob-token` (a real server verifies OAuth tokens here).

#[path = "fixtures/bearer_auth.rs"]
mod bearer_auth;
#[path = "fixtures/confirming.rs"]
mod confirming;

use std::sync::Arc;

use axum::middleware;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use stateseal::boundary::Boundary;
use stateseal::rmcp_adapter::StateSealed;
use stateseal::setup::{Config, start};
use stateseal::{AesGcmCodec, Envelope, KeyRing, ProviderRegistry, RingHandle};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(tracing::Level::INFO)
        .init();
    let mut addr = "127.0.0.1:8080".to_owned();
    let mut keyset = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match (flag.as_str(), args.next()) {
            ("--addr", Some(a)) => addr = a,
            ("--keyset", Some(k)) => keyset = Some(k),
            _ => {
                eprintln!("usage: http_server [--addr 127.0.0.1:PORT] [--keyset STORE_URI]");
                std::process::exit(2);
            }
        }
    }
    // `_protection` keeps the keyset refresh running for the life of the server.
    let (boundary, _protection) = match keyset {
        // A fleet: one call builds the registry, scheduler and boundary from a keyset that rotates without downtime.
        Some(uri) => {
            let config = Config::from_toml_str(&format!(
                "store = {uri:?}\naudience = \"stateseal-example\"\n"
            ))
            .map_err(std::io::Error::other)?;
            let protection = start(&config, ProviderRegistry::with_defaults())
                .await
                .map_err(std::io::Error::other)?;
            (protection.boundary(), Some(protection))
        }
        None => {
            let ring = Arc::new(RingHandle::new(
                KeyRing::ephemeral().map_err(std::io::Error::other)?,
            ));
            let envelope =
                Envelope::builder(Arc::new(AesGcmCodec::new(ring)), Some("stateseal-example"))
                    .build()
                    .map_err(std::io::Error::other)?;
            (Boundary::new(Arc::new(envelope)), None)
        }
    };
    let handler = StateSealed::new(confirming::Confirming, boundary);
    let service = StreamableHttpService::new(
        move || Ok(handler.clone()),
        LocalSessionManager::default().into(),
        StreamableHttpServerConfig::default(),
    );
    let router = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn(bearer_auth::bearer_auth));
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("listening on http://{}/mcp", listener.local_addr()?);
    axum::serve(listener, router).await
}
