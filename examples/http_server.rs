//! A streamable-HTTP rmcp server (axum) whose multi-round tool, prompt and
//! resource are protected by the stateseal boundary, with callers
//! authenticated by OAuth access tokens (`stateseal-oauth`: JWTs checked
//! against the issuer's JWKS; states are bound to the caller). The fleet
//! member of the project's harnesses; `examples/mcp_server.rs` is the
//! deployable server, `stateseal demo` the look without an issuer.
//!
//! ```sh
//! OAUTH="--oauth-issuer https://auth.example.com --oauth-jwks-uri https://auth.example.com/jwks.json"
//! cargo run --example http_server -- $OAUTH --addr 127.0.0.1:8080                # process-local key
//! cargo run --example http_server -- $OAUTH --keyset file:///tmp/ks/keyset.json
//! cargo run --example http_server -- $OAUTH --config fleet.toml [--clock-offset 1.5]  # any store
//! cargo run --example http_server -- $OAUTH --config fleet.toml --replay-store redis://127.0.0.1:6379/0
//! # A keyset under a local:// KEK (development only) needs --allow-local-kek.
//! ```
//! The tool `transfer` is single-use: its state verifies once, fleet-wide when
//! the instances share `--replay-store` (default `memory://`: this process only).
//! Access tokens must name the audience `stateseal-example`.
//! With a keyset, `GET /stats` answers `{"ready":…,"refresh_ok":…,"generation":…,"kms_calls":…}` (no secrets).
//! For operators and probes: `GET /metrics` (Prometheus text format), `GET /healthz` (the
//! process answers), `GET /readyz` (200 once a key ring is loaded and while the keyset stays
//! fresh enough to seal, else 503).

#[path = "../cli/src/demo/confirming.rs"]
mod confirming;
#[path = "fixtures/logging.rs"]
mod logging;
#[path = "fixtures/operators.rs"]
mod operators;
#[path = "../cli/src/demo/routes.rs"]
mod routes;

use std::sync::Arc;

use stateseal::boundary::Boundary;
use stateseal::provider::MEMORY_REPLAY_STORE;
use stateseal::rmcp_adapter::StateSealed;
use stateseal::setup::{Config, start_with_clock};
use stateseal::{
    Clock, Envelope, KeyRing, RingHandle, RingKey, Secret, SystemClock, TokenFormat, UnixTime,
};
use stateseal_oauth::{ResourceServer, ResourceServerConfig, require_bearer};

/// The audience of its states and of the access tokens it accepts.
const AUDIENCE: &str = "stateseal-example";
const USAGE: &str = "usage: http_server --oauth-issuer URL --oauth-jwks-uri URL [--addr 127.0.0.1:PORT] [--keyset STORE_URI | --config FILE] [--replay-store URI] [--clock-offset SECONDS] [--allow-local-kek]";
/// The single-use tool.
const TRANSFER: &str = "transfer";

fn usage(message: &str) -> ! {
    eprintln!("http_server: {message}\n{USAGE}");
    std::process::exit(2)
}

/// The system clock moved by a fixed offset: one fleet member running fast or slow.
#[derive(Debug)]
struct OffsetClock(f64);

impl Clock for OffsetClock {
    fn now(&self) -> UnixTime {
        // A non-finite offset (`--clock-offset inf`) reads as the epoch: every state expired.
        UnixTime::from_secs_f64(SystemClock.now().as_secs_f64() + self.0).unwrap_or(UnixTime::EPOCH)
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    logging::init_from_env().unwrap_or_else(|e| usage(&e));
    // Every stateseal metric, rendered for Prometheus at /metrics.
    let metrics = metrics_exporter_prometheus::PrometheusBuilder::new()
        .install_recorder()
        .map_err(std::io::Error::other)?;
    let mut addr = "127.0.0.1:8080".to_owned();
    let mut config_text = None;
    let mut offset = 0.0;
    let mut allow_local_kek = false;
    let (mut issuer, mut jwks_uri) = (None, None);
    let mut replay_store = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--allow-local-kek" {
            allow_local_kek = true;
            continue;
        }
        match (flag.as_str(), args.next()) {
            ("--addr", Some(a)) => addr = a,
            ("--keyset", Some(k)) => {
                config_text = Some(format!("store = {k:?}\naudience = {AUDIENCE:?}\n"));
            }
            ("--config", Some(path)) => config_text = Some(std::fs::read_to_string(path)?),
            ("--clock-offset", Some(s)) => offset = s.parse().map_err(std::io::Error::other)?,
            ("--replay-store", Some(uri)) => replay_store = Some(uri),
            ("--oauth-issuer", Some(url)) => issuer = Some(url),
            ("--oauth-jwks-uri", Some(url)) => jwks_uri = Some(url),
            _ => usage(&format!("unexpected argument {flag:?}")),
        }
    }
    let (Some(issuer), Some(jwks_uri)) = (issuer, jwks_uri) else {
        usage(
            "--oauth-issuer and --oauth-jwks-uri are required: this server accepts only validated OAuth access tokens (`stateseal demo` runs without an issuer)",
        );
    };
    let oauth = ResourceServerConfig::builder()
        .issuer(issuer)
        .audience(AUDIENCE)
        .jwks_uri(jwks_uri)
        .build()
        .unwrap_or_else(|e| usage(&e.to_string()));
    let clock = Arc::new(OffsetClock(offset));
    let auth = Arc::new(
        ResourceServer::with_clock(oauth, Arc::clone(&clock) as Arc<dyn Clock>)
            .map_err(std::io::Error::other)?,
    );
    let protection = match config_text {
        // A fleet: one call builds the scheduler and boundary from a keyset that rotates without downtime.
        Some(text) => {
            let mut config = Config::from_toml_str(&text).map_err(std::io::Error::other)?;
            // `transfer` is single-use; the flag (else the file, else memory://) says where it is recorded.
            if let Some(uri) = &replay_store {
                config.replay_store = Some(uri.clone());
            }
            config
                .replay_store
                .get_or_insert_with(|| MEMORY_REPLAY_STORE.to_owned());
            if !config.single_use_tools.iter().any(|t| t == TRANSFER) {
                config.single_use_tools.push(TRANSFER.to_owned());
            }
            // Every provider and store, configured from the environment as the
            // deployment sets it (VAULT_*, the AWS chain, Application Default Credentials).
            let registry = stateseal_providers::registry_from_env(allow_local_kek);
            let p = start_with_clock(&config, registry, clock)
                .await
                .map_err(std::io::Error::other)?;
            Some(Arc::new(p))
        }
        None => None,
    };
    let boundary = match &protection {
        Some(p) => p.boundary(),
        None => {
            // A process-local v2 key (single-use states need one).
            tracing::warn!("no keyset: a process-local key; states do not outlive this process");
            let key = RingKey::with_format(
                &Secret::generate().map_err(std::io::Error::other)?,
                TokenFormat::V2,
            );
            let ring = Arc::new(RingHandle::new(
                KeyRing::from_keys(vec![Arc::new(key)]).map_err(std::io::Error::other)?,
            ));
            let envelope = Envelope::builder(ring, Some(AUDIENCE))
                .build()
                .map_err(std::io::Error::other)?;
            let replay = stateseal_providers::registry_from_env(false)
                .open_replay_store(
                    replay_store.as_deref().unwrap_or(MEMORY_REPLAY_STORE),
                    "stateseal:replay:example:",
                )
                .map_err(std::io::Error::other)?;
            Boundary::builder(Arc::new(envelope))
                .replay_store(replay)
                .single_use("tools/call", TRANSFER)
                .build()
        }
    };
    let router = routes::mcp_routes(StateSealed::new(confirming::Confirming, boundary))
        .layer(axum::middleware::from_fn_with_state(auth, require_bearer))
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
