//! The deployable MCP server (the image in `deploy/` runs it): the
//! multi-round tool, prompt and resource of the example server behind the
//! stateseal boundary, with callers authenticated by OAuth 2.1 access tokens
//! (`stateseal-oauth`: JWTs checked against the issuer's JWKS) and nothing
//! else. Operators' endpoints are on a separate listener.
//!
//! ```sh
//! cargo run --example mcp_server -- --config fleet.toml \
//!     [--addr 0.0.0.0:8080] [--admin-addr 127.0.0.1:9090] [--allow-local-kek]
//! ```
//!
//! `fleet.toml` is the fleet's stateseal configuration (`setup::Config`) plus
//! an `[oauth]` table, which is required:
//!
//! ```toml
//! [oauth]
//! issuer = "https://auth.example.com"
//! audience = "https://mcp.example.com/mcp"
//! jwks_uri = "https://auth.example.com/.well-known/jwks.json"
//! resource_metadata = "https://mcp.example.com/.well-known/oauth-protected-resource"
//! leeway = 60
//! ```
//!
//! `--addr` serves `/mcp` (bearer tokens required) and
//! `/.well-known/oauth-protected-resource`; `--admin-addr` serves `/metrics`,
//! `/healthz`, `/readyz` and `/stats`, never `/mcp`.

#[path = "../cli/src/demo/confirming.rs"]
mod confirming;
#[path = "fixtures/logging.rs"]
mod logging;
#[path = "fixtures/operators.rs"]
mod operators;
#[path = "../cli/src/demo/routes.rs"]
mod routes;

use std::sync::Arc;

use axum::http::header;
use stateseal::rmcp_adapter::StateSealed;
use stateseal::setup::{Config, start};
use stateseal_oauth::{
    ResourceServer, ResourceServerConfig, protected_resource_metadata, require_bearer,
};

const USAGE: &str = "usage: mcp_server --config FILE [--addr HOST:PORT] [--admin-addr HOST:PORT] [--allow-local-kek]";

fn usage(message: &str) -> ! {
    eprintln!("mcp_server: {message}\n{USAGE}");
    std::process::exit(2)
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    logging::init_from_env().unwrap_or_else(|e| usage(&e));
    let (mut addr, mut admin_addr) = ("127.0.0.1:8080".to_owned(), "127.0.0.1:9090".to_owned());
    let (mut config_path, mut allow_local_kek) = (None, false);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--allow-local-kek" {
            allow_local_kek = true;
            continue;
        }
        match (flag.as_str(), args.next()) {
            ("--addr", Some(a)) => addr = a,
            ("--admin-addr", Some(a)) => admin_addr = a,
            ("--config", Some(p)) => config_path = Some(p),
            _ => usage(&format!("unexpected argument {flag:?}")),
        }
    }
    let Some(path) = config_path else {
        usage("--config is required");
    };
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| usage(&format!("--config {path}: {e}")));
    let mut table: toml::Table = text
        .parse()
        .unwrap_or_else(|e| usage(&format!("--config {path}: {e}")));
    let oauth = match table.remove("oauth") {
        Some(toml::Value::Table(t)) => ResourceServerConfig::from_toml(&t.to_string())
            .unwrap_or_else(|e| usage(&format!("[oauth] {e}"))),
        _ => usage(
            "the configuration needs an [oauth] table (issuer, audience, jwks_uri): this server accepts only validated OAuth access tokens",
        ),
    };
    let config = Config::from_toml_str(&table.to_string())
        .unwrap_or_else(|e| usage(&format!("--config {path}: {e}")));
    let metrics = metrics_exporter_prometheus::PrometheusBuilder::new()
        .install_recorder()
        .map_err(std::io::Error::other)?;
    let registry = stateseal_providers::registry_from_env(allow_local_kek);
    let protection = Arc::new(
        start(&config, registry)
            .await
            .map_err(std::io::Error::other)?,
    );
    let auth = Arc::new(ResourceServer::new(oauth).map_err(std::io::Error::other)?);
    let metadata = protected_resource_metadata(&auth).to_string();
    let app = routes::mcp_routes(StateSealed::new(
        confirming::Confirming,
        protection.boundary(),
    ))
    .layer(axum::middleware::from_fn_with_state(auth, require_bearer))
    .route(
        "/.well-known/oauth-protected-resource",
        axum::routing::get(move || {
            std::future::ready(([(header::CONTENT_TYPE, "application/json")], metadata))
        }),
    );
    let admin = axum::Router::new()
        .route(
            "/metrics",
            axum::routing::get(move || std::future::ready(metrics.render())),
        )
        .route("/healthz", axum::routing::get(|| std::future::ready("ok")))
        .route("/readyz", {
            let p = Arc::clone(&protection);
            axum::routing::get(move || std::future::ready(operators::readiness(Some(&p))))
        })
        .route("/stats", {
            let p = Arc::clone(&protection);
            axum::routing::get(move || std::future::ready(operators::stats(Some(&p))))
        });
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    let admin_listener = tokio::net::TcpListener::bind(&admin_addr).await?;
    eprintln!(
        "listening on http://{}/mcp, operators' endpoints on http://{}",
        listener.local_addr()?,
        admin_listener.local_addr()?
    );
    // Answers are written in pieces (SSE): TCP_NODELAY keeps Nagle from holding them.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::warn!("cannot set TCP_NODELAY: {e}");
        }
    });
    tokio::try_join!(async { axum::serve(listener, app).await }, async {
        axum::serve(admin_listener, admin).await
    },)?;
    Ok(())
}
