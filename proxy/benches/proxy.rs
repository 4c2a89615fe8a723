//! What the proxy costs a round: two-round conversations (`input_required`
//! with a state of 64 B, 1 KiB or 16 KiB, then the echo and the result),
//! timed directly, through the proxy with sealing off (a pass-through
//! reverse proxy, the baseline) and through the proxy sealing and
//! verifying, the three interleaved round by round (the client on a thread
//! and runtime of its own, the proxies on two workers). Twice: in front of
//! an upstream in this process that answers at once (JSON and an event
//! stream), where the proxy's own work is all there is to see; then in
//! front of the real Python and TypeScript SDK servers of the proxy's tests
//! (proxy/tests/upstreams), as a deployment puts it.
//!
//! ```sh
//! cargo bench -p stateseal-proxy --bench proxy [-- ROUNDS] [json|sse]   # default 2000 rounds a cell
//! ```
//!
//! Prints two Markdown tables: p50 and p99 per target, rounds per second,
//! sealing against the pass-through proxy (the ratio of their p50s, and the
//! median of the ratios taken round by round) and the proxy's added p50.
//! The SDK servers' cells have a quarter of the rounds.

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use serde_json::{Value, json};
use stateseal::boundary::Boundary;
use stateseal::{Envelope, KeyRing, RingHandle};
use stateseal_proxy::Proxy;

const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}"#;

/// The upstream: round 1 asks with a state of `size` bytes, round 2 checks
/// the echo is that state and answers.
async fn upstream(size: usize, sse: bool, request: Request) -> Response {
    let body = axum::body::to_bytes(request.into_body(), usize::MAX)
        .await
        .expect("body");
    let call: Value = serde_json::from_slice(&body).expect("JSON");
    let state = "s".repeat(size);
    let result = match call["params"]["requestState"].as_str() {
        None => json!({"resultType": "input_required", "inputRequests": {}, "requestState": state}),
        Some(echo) => {
            assert_eq!(echo, state, "the upstream reads the plaintext it minted");
            json!({"resultType": "complete", "content": [{"type": "text", "text": "done"}]})
        }
    };
    let answer = json!({"jsonrpc": "2.0", "id": call["id"], "result": result}).to_string();
    // A stream has no length (chunked, as the SDKs' servers send it); a JSON body has one.
    let (kind, body) = if sse {
        let event = axum::body::Bytes::from(format!("event: message\ndata: {answer}\n\n"));
        let stream =
            futures_util::stream::once(async move { Ok::<_, std::convert::Infallible>(event) });
        ("text/event-stream", Body::from_stream(stream))
    } else {
        ("application/json", Body::from(answer))
    };
    let mut response = Response::new(body);
    response
        .headers_mut()
        .insert("content-type", kind.parse().expect("type"));
    response
}

async fn serve(router: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{addr}/mcp")
}

/// One request; the `result` of its answer, JSON or the last event's.
async fn send(client: &reqwest::Client, url: &str, id: u64, params: &Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", params["name"].as_str().unwrap_or(""))
        .body(body.to_string())
        .send()
        .await
        .expect("an answer");
    let text = response.text().await.expect("a body");
    let data = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .next_back()
        .unwrap_or(&text);
    let answer: Value = serde_json::from_str(data).expect("JSON");
    answer
        .get("result")
        .cloned()
        .unwrap_or_else(|| panic!("no result: {answer}"))
}

/// One two-round conversation with the `deploy` tool, deploying to `env`; its time.
async fn round(client: &reqwest::Client, url: &str, id: u64, env: &str) -> Duration {
    let meta: Value = serde_json::from_str(META).expect("meta");
    let mut params = json!({"name": "deploy", "arguments": {"env": env}, "_meta": meta});
    let start = Instant::now();
    let first = send(client, url, 2 * id, &params).await;
    let state = first["requestState"]
        .as_str()
        .expect("input_required")
        .to_owned();
    params["requestState"] = json!(state);
    params["inputResponses"] = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
    let second = send(client, url, 2 * id + 1, &params).await;
    assert_ne!(
        second["resultType"], "input_required",
        "round 2 did not complete: {second}"
    );
    start.elapsed()
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn us(d: Duration) -> String {
    format!("{:.0}", d.as_secs_f64() * 1e6)
}

struct Cell {
    p50: Duration,
    p99: Duration,
    per_second: f64,
}

fn cell(mut times: Vec<Duration>) -> Cell {
    times.sort();
    let total: Duration = times.iter().sum();
    Cell {
        p50: quantile(&times, 0.5),
        p99: quantile(&times, 0.99),
        per_second: times.len() as f64 / total.as_secs_f64(),
    }
}

/// A real SDK server of the proxy's tests.
struct Real(Child, String);

impl Drop for Real {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn installed(script: &str) -> String {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let out = Command::new(format!("{root}/scripts/{script}"))
        .output()
        .expect(script);
    assert!(out.status.success(), "{script}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn real(python: bool, sse: bool) -> Real {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("port")
        .local_addr()
        .expect("addr")
        .port();
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/upstreams");
    let log = std::env::temp_dir().join(format!("stateseal-bench-{port}.jsonl"));
    let mut c = if python {
        let mut c = Command::new(installed("py-env.sh"));
        c.arg(format!("{root}/py_upstream.py"));
        c
    } else {
        let mut c = Command::new("node");
        c.arg(format!(
            "{}/upstream.mjs",
            installed("proxy-upstreams-env.sh")
        ));
        c
    };
    let child = c
        .arg(port.to_string())
        .arg(log)
        .arg(if sse { "sse" } else { "json" })
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start");
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the SDK server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    Real(child, format!("http://127.0.0.1:{port}/mcp"))
}

/// Runs the client's side on a thread and runtime of its own, as a client
/// in another process would: the servers' two workers serve, nothing else.
async fn client_side<T, F, Fut>(run: F) -> T
where
    T: Send + 'static,
    F: FnOnce(reqwest::Client) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = T>,
{
    tokio::task::spawn_blocking(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("the client's runtime");
        let client = reqwest::Client::builder()
            .no_proxy()
            .tcp_nodelay(true)
            .build()
            .expect("client");
        runtime.block_on(run(client))
    })
    .await
    .expect("the client's thread")
}

/// `rounds` conversations (after a tenth more to warm up) with each of
/// `urls` (direct, pass-through, sealing), interleaved, the order turning
/// each round so drift falls on all three alike; each one's times.
async fn interleaved(urls: [String; 3], rounds: u64, env: String) -> [Vec<Duration>; 3] {
    client_side(move |client| async move {
        let mut times = [Vec::new(), Vec::new(), Vec::new()];
        for i in 0..(rounds + rounds / 10) {
            for k in 0..3 {
                let t = ((i as usize) + k) % 3;
                let d = round(&client, &urls[t], i, &env).await;
                if i >= rounds / 10 {
                    times[t].push(d);
                }
            }
        }
        times
    })
    .await
}

/// The pass-through and sealing proxies in front of `upstream`, and their URLs
/// after the upstream's.
async fn targets(envelope: &Arc<Envelope>, upstream: &str) -> ([Proxy; 2], [String; 3]) {
    let pass = Proxy::builder(Boundary::new(Arc::clone(envelope)), upstream)
        .sealing(false)
        .build()
        .expect("proxy");
    let seal = Proxy::builder(Boundary::new(Arc::clone(envelope)), upstream)
        .build()
        .expect("proxy");
    let urls = [
        upstream.to_owned(),
        serve(pass.router()).await,
        serve(seal.router()).await,
    ];
    ([pass, seal], urls)
}

/// Prints one row; the proxy's added p50.
fn row(label: &str, size: usize, times: [Vec<Duration>; 3]) -> Duration {
    let mut paired: Vec<f64> = times[2]
        .iter()
        .zip(&times[1])
        .map(|(s, p)| s.as_secs_f64() / p.as_secs_f64())
        .collect();
    paired.sort_by(f64::total_cmp);
    let ratio = paired[paired.len() / 2];
    let [d, p, s] = times.map(cell);
    let p50s = s.p50.as_secs_f64() / p.p50.as_secs_f64();
    println!(
        "| {label} | {size} B | {} / {} | {} / {} | {} / {} | {:.0} / {:.0} / {:.0} | {p50s:.3} ({ratio:.3}) | {} |",
        us(d.p50),
        us(d.p99),
        us(p.p50),
        us(p.p99),
        us(s.p50),
        us(s.p99),
        d.per_second,
        p.per_second,
        s.per_second,
        us(s.p50.saturating_sub(d.p50)),
    );
    s.p50.saturating_sub(d.p50)
}

const HEADER: &str = "| upstream, answer | state | direct p50 / p99 µs | pass-through p50 / p99 µs | sealing p50 / p99 µs | rounds/s direct / pass / sealing | sealing / pass-through p50 | proxy's added p50 µs |\n|---|---:|---:|---:|---:|---:|---:|---:|";

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rounds: u64 = args.iter().find_map(|a| a.parse().ok()).unwrap_or(2000);
    // `json` or `sse` alone measures that framing alone.
    let only = args.iter().find(|a| *a == "json" || *a == "sse").cloned();
    let framings: Vec<bool> = [false, true]
        .into_iter()
        .filter(|sse| {
            only.as_deref()
                .is_none_or(|o| o == if *sse { "sse" } else { "json" })
        })
        .collect();
    let ring = Arc::new(RingHandle::new(KeyRing::ephemeral().expect("ring")));
    let envelope = Arc::new(
        Envelope::builder(ring, Some("bench"))
            .build()
            .expect("envelope"),
    );
    println!("An upstream in this process that answers at once:\n\n{HEADER}");
    for &sse in &framings {
        for size in [64, 1024, 16384] {
            let app = axum::Router::new().route(
                "/mcp",
                axum::routing::post(move |r: Request| upstream(size, sse, r)),
            );
            let direct = serve(app).await;
            let (_proxies, urls) = targets(&envelope, &direct).await;
            let times = interleaved(urls, rounds, "prod".to_owned()).await;
            row(if sse { "null, SSE" } else { "null, JSON" }, size, times);
        }
    }
    // The SDK servers mint `confirm-deploy:ENV`: ENV sets the state's size.
    println!(
        "\nThe SDK servers of the proxy's tests, {} rounds a cell:\n\n{HEADER}",
        rounds / 4
    );
    for python in [true, false] {
        for &sse in &framings {
            let server = real(python, sse);
            let (_proxies, urls) = targets(&envelope, &server.1).await;
            for size in [64, 1024, 16384] {
                let env = "e".repeat(size - "confirm-deploy:".len());
                let times = interleaved(urls.clone(), rounds / 4, env).await;
                let label = match (python, sse) {
                    (true, false) => "Python lowlevel Server, JSON",
                    (true, true) => "Python lowlevel Server, SSE",
                    (false, false) => "TypeScript McpServer, JSON",
                    (false, true) => "TypeScript McpServer, SSE",
                };
                row(label, size, times);
            }
        }
    }
}
