//! No access token (nor its subject) in any log line, error message or
//! `Debug` output of the resource server, for accepted and refused tokens
//! alike, with every level captured.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Extension;
use serde_json::json;
use stateseal::boundary::AuthenticatedPrincipal;
use stateseal_oauth::{ResourceServer, ResourceServerConfig, require_bearer};
use stateseal_testkit::issuer::{Issuer, hs256_token};
use stateseal_testkit::logs::Logs;

// One thread: the server, the client and the subscriber all live on it.
#[tokio::test(flavor = "current_thread")]
async fn tokens_never_reach_logs_errors_or_debug() {
    let logs = Logs::default();
    let _guard = logs.capture_all();
    let issuer = Issuer::start();
    let audience = "https://mcp.test/mcp";
    let config = ResourceServerConfig::builder()
        .issuer(&issuer.url)
        .audience(audience)
        .jwks_uri(issuer.jwks_uri())
        .build()
        .expect("config");
    let server = Arc::new(ResourceServer::new(config).expect("server"));
    let app = axum::Router::new()
        .route(
            "/",
            axum::routing::get(
                |Extension(p): Extension<AuthenticatedPrincipal>| async move { format!("{p:?}") },
            ),
        )
        .layer(axum::middleware::from_fn_with_state(
            server.clone(),
            require_bearer,
        ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let claims = |sub: &str, exp: u64| {
        json!({"iss": issuer.url, "aud": audience, "sub": sub, "client_id": "client-PRINCIPAL",
            "iat": t, "exp": exp})
    };
    let tokens = [
        issuer.mint(&claims("subject-PRINCIPAL", t + 300)),
        issuer.mint(&claims("subject-PRINCIPAL", t - 600)),
        issuer.mint_unpublished(&claims("subject-PRINCIPAL", t + 300)),
        hs256_token(
            &issuer.current_kid(),
            b"attacker",
            &claims("subject-PRINCIPAL", t + 300),
        ),
    ];
    let mut seen = String::new();
    let client = reqwest::Client::new();
    for token in &tokens {
        let r = client
            .get(&url)
            .header("authorization", format!("Bearer {token}"))
            .send()
            .await
            .expect("request");
        seen.push_str(&format!("{r:?}"));
        seen.push_str(&r.text().await.expect("body"));
        match server.authenticate(token).await {
            Ok(p) => seen.push_str(&format!("{p:?}")),
            Err(e) => seen.push_str(&format!("{e} {e:?}")),
        }
    }
    seen.push_str(&format!("{server:?}"));
    let logged = logs.text();
    assert!(
        logged.contains("bearer token refused"),
        "nothing captured: {logged}"
    );
    assert!(
        seen.contains("expired") && seen.contains("unknown key id"),
        "{seen}"
    );
    for (what, text) in [("logs", &logged), ("errors, responses and Debug", &seen)] {
        for token in &tokens {
            for part in token.split('.').filter(|p| p.len() > 8) {
                assert!(!text.contains(part), "{what} contain a token part");
            }
        }
        assert!(
            !text.contains("subject-PRINCIPAL"),
            "{what} contain the subject"
        );
        assert!(
            !text.contains("client-PRINCIPAL"),
            "{what} contain the client id"
        );
    }
}
