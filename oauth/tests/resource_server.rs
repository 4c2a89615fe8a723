//! The resource server against a local issuer (testkit `Issuer`: a JWKS on a
//! loopback port, RS256 tokens, keys rotated on demand), over real HTTP: what
//! it accepts, everything it refuses with `401` and a challenge, and how
//! often it fetches the issuer's keys.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Extension;
use serde_json::{Value, json};
use stateseal::boundary::AuthenticatedPrincipal;
use stateseal::{ManualClock, UnixTime};
use stateseal_oauth::{Algorithm, Error, ResourceServer, ResourceServerConfig, require_bearer};
use stateseal_testkit::issuer::{Issuer, hs256_token, unsigned_token};

const AUDIENCE: &str = "https://mcp.test/mcp";
const METADATA: &str = "https://mcp.test/.well-known/oauth-protected-resource";

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64()
}

fn config(issuer: &Issuer) -> ResourceServerConfig {
    ResourceServerConfig::builder()
        .issuer(&issuer.url)
        .audience(AUDIENCE)
        .jwks_uri(issuer.jwks_uri())
        .resource_metadata(METADATA)
        .build()
        .expect("config")
}

fn claims(issuer: &Issuer, sub: &str, t: f64) -> Value {
    json!({
        "iss": issuer.url, "aud": AUDIENCE, "sub": sub, "client_id": "client-1",
        "iat": t as u64, "exp": (t + 300.0) as u64,
    })
}

/// Serves `/whoami` behind the layer on a loopback port.
async fn serve(server: Arc<ResourceServer>) -> String {
    let app = axum::Router::new()
        .route(
            "/whoami",
            axum::routing::get(
                |Extension(p): Extension<AuthenticatedPrincipal>| async move {
                    format!("{}|{}", p.client_id, p.subject.unwrap_or_default())
                },
            ),
        )
        .layer(axum::middleware::from_fn_with_state(server, require_bearer));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}/whoami")
}

/// (status, WWW-Authenticate, body) of a request with `token`.
async fn get(url: &str, token: Option<&str>) -> (u16, String, String) {
    let mut req = reqwest::Client::new().get(url);
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let r = req.send().await.expect("request");
    let status = r.status().as_u16();
    let challenge = r
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (status, challenge, r.text().await.expect("body"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn valid_tokens_pass_and_every_forgery_gets_a_challenge() {
    let issuer = Issuer::start();
    let server = Arc::new(ResourceServer::new(config(&issuer)).expect("server"));
    let url = serve(server.clone()).await;
    let t = now();
    let good = issuer.mint(&claims(&issuer, "alice", t));
    assert_eq!(
        get(&url, Some(&good)).await,
        (200, String::new(), "client-1|alice".into())
    );
    // Within the 60 s leeway of its expiry, still accepted.
    let mut late = claims(&issuer, "alice", t);
    late["exp"] = json!(t - 30.0);
    assert_eq!(get(&url, Some(&issuer.mint(&late))).await.0, 200);

    let no_token = get(&url, None).await;
    assert_eq!(no_token.0, 401);
    assert_eq!(
        no_token.1,
        format!("Bearer resource_metadata=\"{METADATA}\"")
    );

    let edit = |f: &dyn Fn(&mut Value)| {
        let mut c = claims(&issuer, "alice", t);
        f(&mut c);
        issuer.mint(&c)
    };
    let kid = issuer.current_kid();
    let jwks_bytes = issuer.jwks().to_string();
    let body = good.split('.').nth(1).expect("payload").to_owned();
    let other = issuer.mint(&claims(&issuer, "bob", t));
    let spliced = {
        let mut parts: Vec<&str> = other.split('.').collect();
        parts[1] = &body;
        parts.join(".")
    };
    let cases: Vec<(&str, String, &str)> = vec![
        ("expired", edit(&|c| c["exp"] = json!(t - 120.0)), "expired"),
        (
            "not yet valid",
            edit(&|c| c["nbf"] = json!(t + 600.0)),
            "not yet valid",
        ),
        (
            "wrong audience",
            edit(&|c| c["aud"] = json!("https://other.test/mcp")),
            "wrong audience",
        ),
        (
            "wrong issuer",
            edit(&|c| c["iss"] = json!("https://evil.test")),
            "wrong issuer",
        ),
        (
            "no subject",
            edit(&|c| {
                c.as_object_mut().expect("obj").remove("sub");
            }),
            "a required claim is missing",
        ),
        (
            "no client",
            edit(&|c| {
                c.as_object_mut().expect("obj").remove("client_id");
            }),
            "no client_id",
        ),
        (
            "alg none",
            unsigned_token(
                &json!({"alg": "none", "kid": kid}),
                &claims(&issuer, "alice", t),
            ),
            "malformed",
        ),
        (
            "HS256 keyed with the published keys",
            hs256_token(&kid, jwks_bytes.as_bytes(), &claims(&issuer, "alice", t)),
            "algorithm not accepted",
        ),
        (
            "unknown key id",
            issuer.mint_unpublished(&claims(&issuer, "alice", t)),
            "unknown key id",
        ),
        (
            "another token's signature",
            spliced,
            "signature does not verify",
        ),
        ("not a JWT", "abc.def".into(), "malformed"),
    ];
    for (what, token, reason) in cases {
        let (status, challenge, body) = get(&url, Some(&token)).await;
        assert_eq!(status, 401, "{what}: {body}");
        assert_eq!(
            challenge,
            format!(
                "Bearer resource_metadata=\"{METADATA}\", error=\"invalid_token\", error_description=\"{reason}\""
            ),
            "{what}"
        );
        assert!(
            !challenge.contains(&token) && !body.contains(&token),
            "{what}: token echoed"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_key_is_fetched_once_and_unknown_key_ids_are_rate_limited() {
    let issuer = Issuer::start();
    let t0 = now();
    let clock = Arc::new(ManualClock::new(
        UnixTime::from_secs_f64(t0).expect("a finite time"),
    ));
    let server = ResourceServer::with_clock(config(&issuer), clock.clone()).expect("server");
    let first = issuer.mint(&claims(&issuer, "alice", t0));
    if let Err(e) = server.authenticate(&first).await {
        panic!("first key: {e}");
    }
    assert_eq!((issuer.fetches(), server.key_set_fetches()), (1, 1));
    server.authenticate(&first).await.expect("cached");
    assert_eq!(issuer.fetches(), 1, "a known key costs no fetch");

    // The issuer rotates mid-run: the new key id is fetched once, at once.
    let old = issuer.current_kid();
    issuer.rotate();
    let rotated = issuer.mint(&claims(&issuer, "alice", t0));
    let p = server.authenticate(&rotated).await.expect("rotated key");
    assert_eq!(p.subject.as_deref(), Some("alice"));
    assert_eq!(issuer.fetches(), 2);
    // Forged key ids: refused, and no more fetches within the refresh interval.
    for _ in 0..50 {
        let forged = issuer.mint_unpublished(&claims(&issuer, "alice", t0));
        assert!(matches!(
            server.authenticate(&forged).await,
            Err(Error::InvalidToken("unknown key id"))
        ));
    }
    assert_eq!(issuer.fetches(), 2, "unknown key ids are rate-limited");
    clock.advance(Duration::from_secs(31));
    let forged = issuer.mint_unpublished(&claims(&issuer, "alice", t0));
    assert!(server.authenticate(&forged).await.is_err());
    assert_eq!(issuer.fetches(), 3, "one fetch per interval");

    // The old key retired: once the held set is past its age, tokens under it fail.
    issuer.retire(&old);
    server
        .authenticate(&first)
        .await
        .expect("held keys until refreshed");
    clock.advance(Duration::from_secs(3600));
    let late = issuer.mint(&claims(&issuer, "alice", clock_now(&clock)));
    server.authenticate(&late).await.expect("refetched");
    assert_eq!(issuer.fetches(), 4);
    // A token under the retired key: its key id is looked up before its times.
    assert!(matches!(
        server.authenticate(&first).await,
        Err(Error::InvalidToken("unknown key id"))
    ));
}

fn clock_now(clock: &ManualClock) -> f64 {
    use stateseal::Clock;
    clock.now().as_secs_f64()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_issuers_keys_nothing_passes_and_held_keys_outlive_an_outage() {
    // Nothing listens on a .invalid host: no key set, 503 with Retry-After.
    let dead = ResourceServerConfig::builder()
        .issuer("https://issuer.invalid")
        .audience(AUDIENCE)
        .jwks_uri("https://issuer.invalid/jwks.json")
        .fetch_timeout(Duration::from_secs(2))
        .build()
        .expect("config");
    let server = Arc::new(ResourceServer::new(dead).expect("server"));
    let url = serve(server).await;
    let issuer = Issuer::start();
    let token = issuer.mint(&claims(&issuer, "alice", now()));
    let r = reqwest::Client::new()
        .get(&url)
        .header("authorization", format!("Bearer {token}"))
        .send()
        .await
        .expect("request");
    assert_eq!(r.status().as_u16(), 503);
    assert_eq!(r.headers()["retry-after"], "5");

    // Keys once fetched stay in use while the issuer is down, and a failed
    // fetch is not retried at once.
    let t0 = now();
    let clock = Arc::new(ManualClock::new(
        UnixTime::from_secs_f64(t0).expect("a finite time"),
    ));
    let server = ResourceServer::with_clock(config(&issuer), clock.clone()).expect("server");
    let mut long = claims(&issuer, "alice", t0);
    long["exp"] = json!(t0 + 7200.0);
    let long = issuer.mint(&long);
    server.authenticate(&long).await.expect("fetched");
    drop(issuer);
    clock.advance(Duration::from_secs(3601));
    for _ in 0..3 {
        let p = server.authenticate(&long).await.expect("held key");
        assert_eq!(p.subject.as_deref(), Some("alice"));
    }
    assert_eq!(
        server.key_set_fetches(),
        2,
        "one failed fetch, then a pause"
    );
}

#[test]
fn bad_configurations_name_their_setting() {
    let base = || {
        ResourceServerConfig::builder()
            .issuer("https://issuer.test")
            .audience(AUDIENCE)
            .jwks_uri("https://issuer.test/jwks.json")
    };
    for (builder, message) in [
        (base().issuer(""), "issuer is required"),
        (base().audience(""), "audience is required"),
        (
            base().jwks_uri("http://issuer.test/jwks.json"),
            "jwks_uri: endpoint",
        ),
        (base().algorithms(&[Algorithm::HS256]), "HMAC algorithm"),
        (base().algorithms(&[]), "at least one algorithm"),
        (
            base().leeway(Duration::from_millis(300_001)),
            "leeway must be between 0 and 300",
        ),
        (
            base().unknown_kid_refresh(Duration::ZERO),
            "unknown_kid_refresh must be positive",
        ),
        (
            base().resource_metadata("https://x\"y"),
            "resource_metadata must be a URL",
        ),
    ] {
        match builder.build() {
            Err(Error::Config(m)) => assert!(m.contains(message), "{m} / {message}"),
            other => panic!("{message}: {other:?}"),
        }
    }
    assert!(base().build().is_ok());
}
