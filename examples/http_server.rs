//! A streamable-HTTP rmcp server (axum) whose multi-round tool, prompt and
//! resource are protected by the stateseal boundary, with a bearer-token
//! auth layer that maps tokens to principals (states are bound to the caller).
//!
//! ```sh
//! cargo run --example http_server -- --addr 127.0.0.1:8080                      # process-local key
//! cargo run --example http_server -- --addr 127.0.0.1:8080 --keyset file:///tmp/ks/keyset.json
//! cargo run --example http_server -- --config fleet.toml [--clock-offset 1.5]    # any store, e.g. Vault
//! # A keyset under a local:// KEK (development only) needs --allow-local-kek.
//! ```
//! Bearer tokens: `alice-token` and `bob-token` (a real server verifies OAuth tokens here).
//! With a keyset, `GET /stats` answers `{"ready":…,"refresh_ok":…,"generation":…,"kms_calls":…}` (no secrets).
//! For operators and probes: `GET /metrics` (Prometheus text format), `GET /healthz` (the
//! process answers), `GET /readyz` (200 once a key ring is loaded and while the keyset stays
//! fresh enough to seal, else 503).

#[path = "../cli/src/demo/bearer_auth.rs"]
mod bearer_auth;
#[path = "../cli/src/demo/confirming.rs"]
mod confirming;
#[path = "fixtures/operators.rs"]
mod operators;

use std::sync::Arc;

use stateseal::boundary::Boundary;
use stateseal::rmcp_adapter::StateSealed;
use stateseal::setup::{Config, start_with_clock};
use stateseal::{AesGcmCodec, Clock, Envelope, KeyRing, ProviderRegistry, RingHandle, SystemClock};

/// The system clock moved by a fixed offset: one fleet member running fast or slow.
#[derive(Debug)]
struct OffsetClock(f64);

impl Clock for OffsetClock {
    fn now(&self) -> f64 {
        SystemClock.now() + self.0
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(tracing::Level::INFO)
        .init();
    // Every stateseal metric, rendered for Prometheus at /metrics.
    let metrics = metrics_exporter_prometheus::PrometheusBuilder::new()
        .install_recorder()
        .map_err(std::io::Error::other)?;
    let mut addr = "127.0.0.1:8080".to_owned();
    let mut config_text = None;
    let mut offset = 0.0;
    let mut allow_local_kek = false;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--allow-local-kek" {
            allow_local_kek = true;
            continue;
        }
        match (flag.as_str(), args.next()) {
            ("--addr", Some(a)) => addr = a,
            ("--keyset", Some(k)) => {
                config_text = Some(format!("store = {k:?}\naudience = \"stateseal-example\"\n"));
            }
            ("--config", Some(path)) => config_text = Some(std::fs::read_to_string(path)?),
            ("--clock-offset", Some(s)) => offset = s.parse().map_err(std::io::Error::other)?,
            _ => {
                eprintln!(
                    "usage: http_server [--addr 127.0.0.1:PORT] [--keyset STORE_URI | --config FILE] [--clock-offset SECONDS] [--allow-local-kek]"
                );
                std::process::exit(2);
            }
        }
    }
    let protection = match config_text {
        // A fleet: one call builds the scheduler and boundary from a keyset that rotates without downtime.
        Some(text) => {
            let config = Config::from_toml_str(&text).map_err(std::io::Error::other)?;
            // Every provider and store, configured from the environment as the
            // deployment sets it (VAULT_*, the AWS chain, Application Default Credentials).
            let mut registry = ProviderRegistry::with_defaults();
            if allow_local_kek {
                registry.allow_local_kek();
            }
            stateseal_providers::register_from_env(&mut registry);
            let p = start_with_clock(&config, registry, Arc::new(OffsetClock(offset)))
                .await
                .map_err(std::io::Error::other)?;
            Some(Arc::new(p))
        }
        None => None,
    };
    let boundary = match &protection {
        Some(p) => p.boundary(),
        None => {
            let ring = Arc::new(RingHandle::new(
                KeyRing::ephemeral().map_err(std::io::Error::other)?,
            ));
            let envelope =
                Envelope::builder(Arc::new(AesGcmCodec::new(ring)), Some("stateseal-example"))
                    .build()
                    .map_err(std::io::Error::other)?;
            Boundary::new(Arc::new(envelope))
        }
    };
    let router = bearer_auth::mcp_router(StateSealed::new(confirming::Confirming, boundary))
        .route("/stats", {
            let p = protection.clone();
            axum::routing::get(move || std::future::ready(operators::stats(p.as_deref())))
        })
        .route(
            "/metrics",
            axum::routing::get(move || std::future::ready(metrics.render())),
        )
        .route("/healthz", axum::routing::get(|| std::future::ready("ok")))
        .route(
            "/readyz",
            axum::routing::get(move || {
                std::future::ready(operators::readiness(protection.as_deref()))
            }),
        );
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("listening on http://{}/mcp", listener.local_addr()?);
    // Answers are written in pieces (SSE): without TCP_NODELAY, Nagle's algorithm and the
    // client's delayed ACK hold every round for ~40 ms (the soak measured p50 42.6 ms).
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::warn!("cannot set TCP_NODELAY: {e}");
        }
    });
    axum::serve(listener, router).await
}
