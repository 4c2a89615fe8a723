//! The boundary's cost under load: the example server's two-round tool over
//! loopback HTTP, with and without `StateSealed`, in the same run. Every client
//! alternates conversations between the two servers, so machine noise hits both
//! alike; the overhead is the extra time per conversation (median over rounds).
//!
//! ```sh
//! cargo run --release --example overhead -- [--seconds 3] [--rounds 3] [--clients 8]
//! ```

#[path = "../cli/src/demo/confirming.rs"]
mod confirming;

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::ServerHandler;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use stateseal::boundary::Boundary;
use stateseal::rmcp_adapter::StateSealed;
use stateseal::{Envelope, KeyRing, RingHandle, Secret};
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

/// One two-round conversation on `conn`.
async fn conversation(conn: &mut Conn) -> std::io::Result<()> {
    let first = conn
        .call(json!({"name": "deploy", "arguments": {"env": "prod"}}))
        .await?;
    let state = first["result"]["requestState"]
        .as_str()
        .ok_or_else(|| std::io::Error::other(format!("no state: {first}")))?
        .to_owned();
    let second = conn
        .call(
            json!({"name": "deploy", "arguments": {"env": "prod"}, "requestState": state,
            "inputResponses": {"confirm": {"action": "accept", "content": {"ok": true}}}}),
        )
        .await?;
    if second["result"]["resultType"] != "complete" {
        return Err(std::io::Error::other(format!(
            "round 2 did not complete: {second}"
        )));
    }
    Ok(())
}

/// `clients` tasks each alternate conversations between the plain and the sealed
/// server (order flipped every time), so both see the same machine conditions;
/// returns (seconds spent on plain, on sealed, conversations each).
async fn measure(
    plain: &str,
    sealed: &str,
    clients: usize,
    seconds: f64,
) -> std::io::Result<(f64, f64, u64)> {
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (plain, sealed) = (plain.to_owned(), sealed.to_owned());
        tasks.push(tokio::spawn(async move {
            let (mut a, mut b) = (Conn::open(&plain).await?, Conn::open(&sealed).await?);
            let (mut ta, mut tb, mut n) = (0.0, 0.0, 0u64);
            while Instant::now() < deadline {
                for plain_turn in [n % 2 == 0, n % 2 == 1] {
                    let t = Instant::now();
                    if plain_turn {
                        conversation(&mut a).await?;
                        ta += t.elapsed().as_secs_f64();
                    } else {
                        conversation(&mut b).await?;
                        tb += t.elapsed().as_secs_f64();
                    }
                }
                n += 1;
            }
            Ok::<_, std::io::Error>((ta, tb, n))
        }));
    }
    let (mut ta, mut tb, mut n) = (0.0, 0.0, 0);
    for t in tasks {
        let (a, b, k) = t.await.map_err(std::io::Error::other)??;
        ta += a;
        tb += b;
        n += k;
    }
    Ok((ta, tb, n))
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
    let envelope = Envelope::builder(ring, Some("overhead"))
        .build()
        .map_err(std::io::Error::other)?;
    let plain = serve(confirming::Confirming).await?;
    let sealed = serve(StateSealed::new(
        confirming::Confirming,
        Boundary::new(Arc::new(envelope)),
    ))
    .await?;
    measure(&plain, &sealed, clients, 0.5).await?; // warm up both
    let mut overheads = Vec::new();
    let (mut total_a, mut total_b, mut total_n) = (0.0, 0.0, 0);
    for _ in 0..rounds {
        let (ta, tb, n) = measure(&plain, &sealed, clients, seconds).await?;
        overheads.push((tb - ta) / ta * 100.0);
        (total_a, total_b, total_n) = (total_a + ta, total_b + tb, total_n + n);
    }
    // Busy time per conversation on each server with `clients` in flight: throughput = clients / that.
    let (per_a, per_b) = (total_a / total_n as f64, total_b / total_n as f64);
    println!(
        "{}",
        json!({"clients": clients, "seconds_per_round": seconds, "rounds": rounds, "conversations_each": total_n,
            "conversations_per_s_without": (clients as f64 / per_a).round(),
            "conversations_per_s_with": (clients as f64 / per_b).round(),
            "median_overhead_percent": (median(overheads.clone()) * 10.0).round() / 10.0,
            "overhead_percent_per_round": overheads.iter().map(|o| (o * 10.0).round() / 10.0).collect::<Vec<_>>()})
    );
    Ok(())
}
