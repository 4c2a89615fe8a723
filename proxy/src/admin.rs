//! The operators' port: `/metrics` (Prometheus text), `/healthz` (the
//! process answers), `/readyz` (a ring is loaded and the keyset fresh
//! enough) and `/stats` (generation, KMS calls), never `/mcp`.

use std::sync::Arc;

use axum::http::StatusCode;
use stateseal::setup::Protection;

/// The operators' router for `protection`; `metrics` renders the process's metrics.
pub fn admin_router(
    protection: Arc<Protection>,
    metrics: impl Fn() -> String + Clone + Send + Sync + 'static,
) -> axum::Router {
    let ready = Arc::clone(&protection);
    axum::Router::new()
        .route(
            "/metrics",
            axum::routing::get(move || std::future::ready(metrics())),
        )
        .route("/healthz", axum::routing::get(|| std::future::ready("ok")))
        .route(
            "/readyz",
            axum::routing::get(move || std::future::ready(readiness(&ready))),
        )
        .route(
            "/stats",
            axum::routing::get(move || std::future::ready(stats(&protection))),
        )
}

/// 200 while the instance can seal, else 503; a failing replay store is
/// detail (single-use states are refused, every other state still works).
pub fn readiness(p: &Protection) -> (StatusCode, String) {
    if !p.is_ready() {
        return (StatusCode::SERVICE_UNAVAILABLE, "not ready".to_owned());
    }
    let boundary = p.boundary();
    if boundary.replay_store_failing() {
        let detail = boundary
            .replay_store_problem()
            .unwrap_or_else(|| "no detail".to_owned());
        return (
            StatusCode::OK,
            format!("ready; replay store failing ({detail}): single-use states are refused"),
        );
    }
    (StatusCode::OK, "ready".to_owned())
}

/// Readiness, keyset generation and KMS calls, as JSON.
pub fn stats(p: &Protection) -> String {
    let status = p.status();
    serde_json::json!({
        "ready": p.is_ready(),
        "refresh_ok": status.last_error.is_none(),
        "generation": status.generation.unwrap_or(0),
        "kms_calls": p.scheduler().kms_calls(),
        "pid": std::process::id(),
    })
    .to_string()
}
