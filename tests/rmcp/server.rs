//! The deployable server (`examples/mcp_server.rs`, the image `deploy/`
//! runs) as a process: callers need an access token from the configured
//! issuer, operators' endpoints answer only on the admin listener, and a
//! configuration without `[oauth]` is refused.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use stateseal::LocalProvider;
use stateseal_testkit::free_port;
use stateseal_testkit::issuer::Issuer;

const AUDIENCE: &str = "http://127.0.0.1/mcp";

/// The example's binary, built by `cargo test` beside this test's.
fn server_binary() -> PathBuf {
    stateseal_testkit::built("examples/mcp_server")
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// (status line, headers and body) of one HTTP/1.1 request.
fn http(port: u16, request: &str) -> (String, String) {
    // Not listening yet (the server is starting): no status.
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return (String::new(), String::new());
    };
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    s.write_all(request.as_bytes()).expect("write");
    let mut raw = String::new();
    let _ = s.read_to_string(&mut raw);
    let (status, rest) = raw.split_once("\r\n").unwrap_or((&raw, ""));
    (status.to_owned(), rest.to_owned())
}

fn get(port: u16, path: &str) -> (String, String) {
    http(
        port,
        &format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"),
    )
}

fn call(port: u16, token: &str, params: Value) -> (String, String) {
    let (name, body) = crate::http::tools_call(params);
    http(
        port,
        &format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {name}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    )
}

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "stateseal-mcp-server-{}-{}",
        std::process::id(),
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("clock")
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).expect("dir");
    dir
}

#[test]
fn only_validated_tokens_reach_the_tools_and_operators_have_their_own_listener() {
    let issuer = Issuer::start();
    let dir = scratch();
    LocalProvider::create_kek(dir.join("kek.bin")).expect("kek");
    let config = dir.join("fleet.toml");
    std::fs::write(
        &config,
        format!(
            "store = \"file://{d}/keyset.json\"\naudience = \"stateseal-test\"\nkek = \"local://{d}/kek.bin\"\n\
             create_if_missing = true\nrotation_period = 0\n\n[oauth]\nissuer = {i:?}\naudience = {AUDIENCE:?}\n\
             jwks_uri = {j:?}\nresource_metadata = \"http://127.0.0.1/.well-known/oauth-protected-resource\"\n",
            d = dir.display(),
            i = issuer.url,
            j = issuer.jwks_uri(),
        ),
    )
    .expect("config");
    let (port, admin) = (free_port(), free_port());
    let log = dir.join("server.log");
    let _server = Killed(
        Command::new(server_binary())
            // Warnings, and the OAuth layer's debug lines (a refused token).
            .env("RUST_LOG", "warn,stateseal_oauth=debug")
            .args([
                "--config",
                &config.display().to_string(),
                "--addr",
                &format!("127.0.0.1:{port}"),
                "--admin-addr",
                &format!("127.0.0.1:{admin}"),
                "--allow-local-kek",
            ])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log"))
            .spawn()
            .expect("start mcp_server"),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while get(admin, "/readyz").0 != "HTTP/1.1 200 OK" {
        assert!(Instant::now() < deadline, "not ready in 30 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Operators' endpoints: on the admin listener only.
    assert_eq!(get(admin, "/healthz").0, "HTTP/1.1 200 OK");
    let (status, metrics) = get(admin, "/metrics");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(metrics.contains("stateseal_ready"), "{metrics}");
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let token = issuer.mint(&json!({
        "iss": issuer.url, "aud": AUDIENCE, "sub": "alice", "client_id": "c",
        "iat": t, "exp": t + 300,
    }));
    // The public listener does not serve them at all: 401 without a token
    // (the layer answers first), 404 with one.
    for path in ["/metrics", "/stats", "/readyz", "/healthz"] {
        assert_eq!(get(port, path).0, "HTTP/1.1 401 Unauthorized", "{path}");
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
        );
        assert_eq!(
            http(port, &request).0,
            "HTTP/1.1 404 Not Found",
            "{path} on the public listener"
        );
    }
    assert_eq!(get(admin, "/mcp").0, "HTTP/1.1 404 Not Found");
    // Discovery, without a token.
    let (status, meta) = get(port, "/.well-known/oauth-protected-resource");
    assert_eq!(status, "HTTP/1.1 200 OK");
    let meta: Value =
        serde_json::from_str(meta.split("\r\n\r\n").nth(1).expect("body")).expect("json");
    assert_eq!(meta["resource"], AUDIENCE);
    assert_eq!(meta["authorization_servers"], json!([issuer.url]));
    // The demo's fixed tokens are nothing here; a validated token is.
    let params = json!({"name": "deploy", "arguments": {"env": "prod"}});
    let (status, rest) = call(port, "alice-token", params.clone());
    assert_eq!(status, "HTTP/1.1 401 Unauthorized");
    assert!(rest.contains("error=\"invalid_token\""), "{rest}");
    let (status, rest) = call(port, &token, params);
    assert_eq!(status, "HTTP/1.1 200 OK", "{rest}");
    assert!(rest.contains("\"requestState\":\"v2."), "{rest}");
    // RUST_LOG reached the server: the refusal is logged at debug, without
    // the token; nothing at info (the default level) got through.
    let logged = std::fs::read_to_string(&log).expect("server log");
    assert!(logged.contains("bearer token refused"), "{logged}");
    assert!(!logged.contains(" INFO "), "{logged}");
    for secret in ["alice-token", token.as_str()] {
        assert!(!logged.contains(secret), "a token in the log: {logged}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A `RUST_LOG` the server cannot read is refused before anything else is
/// read or started (exit 2), with the value and what was expected.
#[test]
fn a_log_filter_it_cannot_read_is_refused() {
    let dir = scratch();
    for (value, said) in [
        ("stateseal=loud", "RUST_LOG \"stateseal=loud\""),
        (
            "warn,stateseal=verbose",
            "RUST_LOG \"warn,stateseal=verbose\"",
        ),
    ] {
        let out = Command::new(server_binary())
            .env("RUST_LOG", value)
            .args(["--config", &dir.join("fleet.toml").display().to_string()])
            .output()
            .expect("run");
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{e}");
        assert!(e.contains(said) && e.contains("expected a level"), "{e}");
        // Refused before the configuration was looked for.
        assert!(!e.contains("fleet.toml"), "{e}");
    }
    assert_eq!(std::fs::read_dir(&dir).expect("dir").count(), 0);
    let _ = std::fs::remove_dir_all(dir);
}

/// `mcp_server --config <file with text>`: its exit code and stderr.
fn refused_config(text: &str) -> (Option<i32>, String) {
    let dir = scratch();
    let config = dir.join("fleet.toml");
    std::fs::write(&config, text).expect("config");
    let out = Command::new(server_binary())
        .args(["--config", &config.display().to_string()])
        .output()
        .expect("run");
    let _ = std::fs::remove_dir_all(dir);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_configuration_without_oauth_is_refused() {
    let keyset = "store = \"file:///tmp/k.json\"\naudience = \"a\"\n";
    let (code, e) = refused_config(keyset);
    assert_eq!(code, Some(2), "{e}");
    assert!(e.contains("needs an [oauth] table"), "{e}");
    let (code, e) = refused_config(&format!(
        "{keyset}[oauth]\nissuer = \"https://issuer.invalid\"\naudience = \"x\"\njwks_uri = \"http://issuer.invalid/jwks\"\n"
    ));
    assert_eq!(code, Some(2), "{e}");
    assert!(e.contains("[oauth]") && e.contains("jwks_uri"), "{e}");
    // A leeway that is no duration, or one too long, in the builder's words.
    for leeway in ["-1", "nan", "301"] {
        let (code, e) = refused_config(&format!(
            "{keyset}[oauth]\nissuer = \"https://issuer.invalid\"\naudience = \"x\"\njwks_uri = \"https://issuer.invalid/jwks\"\nleeway = {leeway}\n"
        ));
        assert_eq!(code, Some(2), "{leeway}: {e}");
        assert!(
            e.contains("[oauth] invalid configuration: leeway must be between 0 and 300 seconds"),
            "{leeway}: {e}"
        );
    }
}
