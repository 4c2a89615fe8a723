//! Operating the proxy: the configuration from `STATESEAL_*` variables alone,
//! the operators' port (health, readiness, stats, the proxy's metrics, a
//! request refused for its headers counted there), and a
//! shutdown on SIGTERM that finishes cleanly.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;

use stateseal_testkit::http::http_post_json;

use super::{Fleet, ProxyProcess, Sdk, Upstream, client};

/// A GET of `url` (`http://HOST:PORT/PATH`); the status line and the body.
fn get(url: &str) -> (String, String) {
    let rest = url.strip_prefix("http://").expect("http");
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut stream = TcpStream::connect(host).expect("connect");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read");
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    (
        head.lines().next().unwrap_or("").to_owned(),
        body.to_owned(),
    )
}

#[test]
fn the_fleet_settings_come_from_the_environment_and_operators_read_the_proxy_on_its_port() {
    let fleet = Fleet::new("operations", "", None);
    let upstream = Upstream::start(Sdk::TypeScript, "json", &fleet.dir);
    let store = fleet.store();
    let envs = [
        ("STATESEAL_STORE", store.as_str()),
        ("STATESEAL_AUDIENCE", super::AUDIENCE),
        ("STATESEAL_KEYSET_ID", fleet.pins[1].as_str()),
        ("STATESEAL_KEYSET_KEKS", fleet.pins[3].as_str()),
    ];
    let mut proxy = ProxyProcess::start_with(
        &["--upstream", &upstream.url, "--admin", "127.0.0.1:0"],
        &envs,
        &fleet.dir,
    );
    let log = proxy.logged();
    let admin = log
        .split("operators' endpoints on ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .expect("the operators' URL is logged")
        .to_owned();
    let out = client(Sdk::TypeScript, &proxy.url, &["tool"], None);
    assert_eq!(out["rounds"][0]["final"], "deployed to prod", "{out}");
    assert_eq!(
        get(&format!("{admin}/healthz")),
        ("HTTP/1.1 200 OK".to_owned(), "ok".to_owned())
    );
    assert_eq!(
        get(&format!("{admin}/readyz")),
        ("HTTP/1.1 200 OK".to_owned(), "ready".to_owned())
    );
    let (status, stats) = get(&format!("{admin}/stats"));
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(
        stats.contains("\"ready\":true") && stats.contains("\"generation\":1"),
        "{stats}"
    );
    // A call whose Mcp-Name says another tool than its body (SEP-2243): the
    // proxy answers it, the server never sees it, operators count it.
    let seen = upstream.received().len();
    let call = r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"deploy","arguments":{"env":"prod"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
    let port: u16 = proxy
        .url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .parse()
        .expect("the proxy's port");
    let (status, body) = http_post_json(
        port,
        "/mcp",
        &[
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "lookup"),
        ],
        call,
    )
    .expect("the proxy answers");
    assert_eq!(status, 400, "{body}");
    assert!(body.contains(r#""code":-32020"#), "{body}");
    assert_eq!(upstream.received().len(), seen, "the server was called");
    assert!(
        proxy.logged().contains("do not mirror its body") && !proxy.logged().contains("lookup"),
        "{}",
        proxy.logged()
    );
    let (_, metrics) = get(&format!("{admin}/metrics"));
    assert!(
        metrics.contains("stateseal_proxy_requests_total{outcome=\"header_mismatch\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("stateseal_proxy_requests_total{outcome=\"forwarded\"}"),
        "{metrics}"
    );
    assert!(
        metrics.contains("stateseal_unseals_total 1"),
        "the echo was verified here: {metrics}"
    );
    let (status, _) = get(&format!("{admin}/mcp"));
    assert!(
        status.contains("404"),
        "the operators' port serves no MCP: {status}"
    );
    // SIGTERM: the proxy says so and exits cleanly.
    let killed = Command::new("kill")
        .args(["-TERM", &proxy.pid().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let status = proxy.wait();
    assert!(status.success(), "{status}: {}", proxy.logged());
    assert!(
        proxy.logged().contains("shutting down"),
        "{}",
        proxy.logged()
    );
}
