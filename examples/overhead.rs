//! The boundary's cost under load: conversations per second of the example
//! server's two-round tool over loopback HTTP, with and without `StateSealed`,
//! measured in the same run (interleaved rounds, medians).
//!
//! ```sh
//! cargo run --release --example overhead -- [--seconds 3] [--rounds 3] [--clients 8]
//! ```

#[path = "fixtures/confirming.rs"]
mod confirming;

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::ServerHandler;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use stateseal::boundary::Boundary;
use stateseal::rmcp_adapter::StateSealed;
use stateseal::{AesGcmCodec, Envelope, KeyRing, RingHandle, Secret};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

async fn serve<H: ServerHandler + Clone>(handler: H) -> std::io::Result<String> {
    let config = StreamableHttpServerConfig::default().with_json_response(true);
    let service = StreamableHttpService::new(
        move || Ok(handler.clone()),
        LocalSessionManager::default().into(),
        config,
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?.to_string();
    tokio::spawn(async move {
        axum::serve(listener, axum::Router::new().nest_service("/mcp", service)).await
    });
    Ok(addr)
}

/// A keep-alive HTTP/1.1 connection speaking the 2026-07-28 stateless lifecycle.
struct Conn {
    io: BufReader<TcpStream>,
    addr: String,
}

impl Conn {
    async fn open(addr: &str) -> std::io::Result<Self> {
        Ok(Self {
            io: BufReader::new(TcpStream::connect(addr).await?),
            addr: addr.to_owned(),
        })
    }

    async fn call(&mut self, mut params: Value) -> std::io::Result<Value> {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
            "io.modelcontextprotocol/clientInfo": {"name": "overhead", "version": "1"}
        });
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
            .to_string();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: deploy\r\nContent-Length: {}\r\n\r\n",
            self.addr,
            body.len()
        );
        self.io
            .get_mut()
            .write_all(format!("{head}{body}").as_bytes())
            .await?;
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if self.io.read_line(&mut line).await? == 0 {
                return Err(std::io::Error::other("connection closed"));
            }
            if line == "\r\n" {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().map_err(std::io::Error::other)?;
            }
        }
        let mut buf = vec![0; length];
        self.io.read_exact(&mut buf).await?;
        serde_json::from_slice(&buf).map_err(std::io::Error::other)
    }
}

/// Two-round conversations per second, from `clients` concurrent connections.
async fn measure(addr: &str, clients: usize, seconds: f64) -> std::io::Result<f64> {
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let addr = addr.to_owned();
        tasks.push(tokio::spawn(async move {
            let mut conn = Conn::open(&addr).await?;
            let mut done = 0u64;
            while Instant::now() < deadline {
                let first = conn.call(json!({"name": "deploy", "arguments": {"env": "prod"}})).await?;
                let state = first["result"]["requestState"].as_str().ok_or_else(|| std::io::Error::other(format!("no state: {first}")))?.to_owned();
                let second = conn
                    .call(json!({"name": "deploy", "arguments": {"env": "prod"}, "requestState": state,
                        "inputResponses": {"confirm": {"action": "accept", "content": {"ok": true}}}}))
                    .await?;
                if second["result"]["resultType"] != "complete" {
                    return Err(std::io::Error::other(format!("round 2 did not complete: {second}")));
                }
                done += 1;
            }
            Ok::<u64, std::io::Error>(done)
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.map_err(std::io::Error::other)??;
    }
    Ok(total as f64 / seconds)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let (mut seconds, mut rounds, mut clients) = (3.0, 3, 8);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().and_then(|v| v.parse::<f64>().ok());
        match (flag.as_str(), value) {
            ("--seconds", Some(v)) if v > 0.0 => seconds = v,
            ("--rounds", Some(v)) if v >= 1.0 => rounds = v as usize,
            ("--clients", Some(v)) if v >= 1.0 => clients = v as usize,
            _ => {
                eprintln!("usage: overhead [--seconds S] [--rounds N] [--clients C]");
                std::process::exit(2);
            }
        }
    }
    let ring = Arc::new(RingHandle::new(
        KeyRing::from_secrets(&[Secret::generate().map_err(std::io::Error::other)?])
            .map_err(std::io::Error::other)?,
    ));
    let envelope = Envelope::builder(Arc::new(AesGcmCodec::new(ring)), Some("overhead"))
        .build()
        .map_err(std::io::Error::other)?;
    let plain = serve(confirming::Confirming).await?;
    let sealed = serve(StateSealed::new(
        confirming::Confirming,
        Boundary::new(Arc::new(envelope)),
    ))
    .await?;
    measure(&plain, clients, 0.5).await?; // warm up both
    measure(&sealed, clients, 0.5).await?;
    let (mut without, mut with) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        without.push(measure(&plain, clients, seconds).await?);
        with.push(measure(&sealed, clients, seconds).await?);
    }
    let (a, b) = (median(without.clone()), median(with.clone()));
    // Each pair ran back to back, so the per-pair ratio cancels slow drifts of the machine.
    let paired = median(
        without
            .iter()
            .zip(&with)
            .map(|(w, s)| (w - s) / w * 100.0)
            .collect(),
    );
    println!(
        "{}",
        json!({"clients": clients, "seconds_per_round": seconds, "rounds": rounds,
            "conversations_per_s_without": a.round(), "conversations_per_s_with": b.round(),
            "overhead_percent_of_medians": ((a - b) / a * 1000.0).round() / 10.0,
            "overhead_percent_median_of_pairs": (paired * 10.0).round() / 10.0,
            "all_without": without.iter().map(|v| v.round()).collect::<Vec<_>>(),
            "all_with": with.iter().map(|v| v.round()).collect::<Vec<_>>()})
    );
    Ok(())
}
