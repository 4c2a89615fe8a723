//! The proxy in this process in front of a scripted upstream that answers
//! exactly the bytes a test gives it (what no real SDK can be made to send:
//! streams cut mid-event, oversized events, non-string states, odd
//! framing), and what the client sees, byte for byte.

mod callers;
mod failures;
mod requests;
mod streams;

use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::response::Response;
use http::{HeaderMap, Method, StatusCode};
use serde_json::{Value, json};
use stateseal::boundary::{Boundary, FailureMode};
use stateseal::{Envelope, KeyRing, RingHandle};
use stateseal_proxy::Proxy;
use stateseal_proxy::settings::{PrincipalMode, ProxySettings};

/// One request the upstream received.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) method: Method,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

/// How the upstream answers.
#[derive(Clone)]
pub(crate) struct Reply {
    pub(crate) status: StatusCode,
    pub(crate) content_type: &'static str,
    /// The body, in these chunks (each written on its own).
    pub(crate) chunks: Vec<Vec<u8>>,
    /// End the body with an error instead of its end (the connection drops),
    /// once this is notified.
    pub(crate) die: Option<Arc<tokio::sync::Notify>>,
    /// More headers of the answer.
    pub(crate) headers: Vec<(&'static str, &'static str)>,
}

impl Reply {
    pub(crate) fn json(body: &Value) -> Self {
        Self::bytes("application/json", serde_json::to_vec(body).expect("JSON"))
    }

    pub(crate) fn bytes(content_type: &'static str, body: Vec<u8>) -> Self {
        Self {
            status: StatusCode::OK,
            content_type,
            chunks: vec![body],
            die: None,
            headers: Vec::new(),
        }
    }

    /// `body` as an event stream in chunks of `size` bytes.
    /// `message` as a JSON body, or as one event when `sse`.
    pub(crate) fn message(message: &Value, sse: bool) -> Self {
        if sse {
            Self::sse(
                format!("event: message\ndata: {message}\n\n").as_bytes(),
                4096,
            )
        } else {
            Self::json(message)
        }
    }

    pub(crate) fn sse(body: &[u8], size: usize) -> Self {
        Self {
            status: StatusCode::OK,
            content_type: "text/event-stream",
            chunks: body.chunks(size).map(<[u8]>::to_vec).collect(),
            die: None,
            headers: Vec::new(),
        }
    }
}

type Script = Arc<dyn Fn(&Seen) -> Reply + Send + Sync>;

/// A scripted upstream and the proxy in front of it.
pub(crate) struct Rig {
    pub(crate) url: String,
    pub(crate) boundary: Boundary,
    seen: Arc<Mutex<Vec<Seen>>>,
    client: reqwest::Client,
}

async fn upstream(
    State((seen, script)): State<(Arc<Mutex<Vec<Seen>>>, Script)>,
    request: Request,
) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX).await.expect("body");
    let s = Seen {
        method: parts.method,
        headers: parts.headers,
        body,
    };
    let reply = script(&s);
    seen.lock().expect("seen").push(s);
    let chunks = reply.chunks.clone();
    let die = reply.die.clone();
    // One chunk is one body of known length; more are a stream.
    let body = if chunks.len() == 1 && die.is_none() {
        Body::from(chunks[0].clone())
    } else {
        use futures_util::StreamExt as _;
        let chunks = futures_util::stream::iter(
            chunks
                .into_iter()
                .map(|c| Ok::<_, std::io::Error>(Bytes::from(c))),
        );
        // The connection drops once the test has seen the stream begin.
        let death = futures_util::stream::iter(die).then(|notify| async move {
            // Pending once, so what came before is on the wire even when the
            // test notified first.
            tokio::task::yield_now().await;
            notify.notified().await;
            Err(std::io::Error::other("the upstream died"))
        });
        Body::from_stream(chunks.chain(death))
    };
    let mut response = Response::new(body);
    *response.status_mut() = reply.status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        reply.content_type.parse().expect("type"),
    );
    for (name, value) in &reply.headers {
        response
            .headers_mut()
            .append(*name, value.parse().expect("value"));
    }
    response
}

async fn serve(router: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{addr}/mcp")
}

impl Rig {
    pub(crate) async fn new(script: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Self {
        Self::with(ProxySettings::new(PrincipalMode::Unbound), script).await
    }

    pub(crate) async fn with(
        settings: ProxySettings,
        script: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
    ) -> Self {
        Self::with_mode(settings, FailureMode::Reject, script).await
    }

    pub(crate) async fn with_mode(
        settings: ProxySettings,
        mode: FailureMode,
        script: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
    ) -> Self {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let script: Script = Arc::new(script);
        let up = serve(
            axum::Router::new()
                .route("/mcp", axum::routing::any(upstream))
                .with_state((Arc::clone(&seen), script)),
        )
        .await;
        Self::in_front_of(&up, settings, mode, seen).await
    }

    pub(crate) async fn in_front_of(
        up: &str,
        settings: ProxySettings,
        mode: FailureMode,
        seen: Arc<Mutex<Vec<Seen>>>,
    ) -> Self {
        let ring = Arc::new(RingHandle::new(KeyRing::ephemeral().expect("ring")));
        let envelope = Envelope::builder(ring, Some("edges"))
            .build()
            .expect("envelope");
        let boundary = Boundary::builder(Arc::new(envelope))
            .failure_mode(mode)
            .build();
        let proxy = Proxy::builder(boundary.clone(), up)
            .settings(settings)
            .build()
            .expect("proxy");
        let url = serve(proxy.router()).await;
        Self {
            url,
            boundary,
            seen,
            client: reqwest::Client::new(),
        }
    }

    /// What the upstream received.
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("seen").clone()
    }

    /// A POST of `body` with `headers`; the status, content type and body.
    pub(crate) async fn post(
        &self,
        body: impl Into<reqwest::Body>,
        headers: &[(&str, &str)],
    ) -> (StatusCode, String, Vec<u8>) {
        let mut r = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .body(body);
        if !headers.iter().any(|(k, _)| *k == "accept") {
            r = r.header("accept", "application/json, text/event-stream");
        }
        for (k, v) in headers {
            r = r.header(*k, *v);
        }
        let response = r.send().await.expect("the proxy answers");
        let status = response.status();
        let kind = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().expect("ascii").to_owned())
            .unwrap_or_default();
        (
            status,
            kind,
            response.bytes().await.expect("a body").to_vec(),
        )
    }

    /// A POST whose answer is read until it holds `first`, then `then` is
    /// notified and the rest read; the whole body.
    pub(crate) async fn post_then(
        &self,
        body: String,
        first: &[u8],
        then: &tokio::sync::Notify,
    ) -> Vec<u8> {
        let mut response = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body)
            .send()
            .await
            .expect("the proxy answers");
        let mut got = Vec::new();
        let mut told = false;
        while let Some(chunk) = response.chunk().await.expect("the proxy's stream") {
            got.extend_from_slice(&chunk);
            if !told && got.starts_with(first) {
                then.notify_one();
                told = true;
            }
        }
        got
    }

    pub(crate) async fn get(&self, headers: &[(&str, &str)]) -> (StatusCode, Vec<u8>) {
        let mut r = self
            .client
            .get(&self.url)
            .header("accept", "text/event-stream");
        for (k, v) in headers {
            r = r.header(*k, *v);
        }
        let response = r.send().await.expect("the proxy answers");
        (
            response.status(),
            response.bytes().await.expect("a body").to_vec(),
        )
    }

    /// Whether `token` opens, for a `deploy` call with `env`, to `state`.
    pub(crate) fn opens(&self, token: &str, env: &str, state: &str) -> bool {
        let mut params =
            json!({"name": "deploy", "arguments": {"env": env}, "requestState": token});
        self.boundary
            .open_params("tools/call", &mut params, &Ok(None))
            .is_ok()
            && params["requestState"] == state
    }
}

/// A `tools/call` of `deploy` with `env`, id `id`, and an echoed state if any.
pub(crate) fn call(id: Value, env: &str, state: Option<&str>) -> Value {
    let mut params = json!({"name": "deploy", "arguments": {"env": env}});
    if let Some(s) = state {
        params["requestState"] = json!(s);
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// An `input_required` answer to `id` with `state`.
pub(crate) fn asks(id: Value, state: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"resultType": "input_required", "inputRequests": {}, "requestState": state}})
}

pub(crate) fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The last message of an answer: its last event's data, or the JSON body.
pub(crate) fn last_message(body: &[u8], sse: bool) -> Value {
    if sse {
        events(body).pop().expect("an event")
    } else {
        serde_json::from_slice(body).expect("JSON")
    }
}

/// The data of every event in an event-stream body, as JSON.
pub(crate) fn events(body: &[u8]) -> Vec<Value> {
    text(body)
        .split("\n\n")
        .flat_map(|e| e.split("\r\n\r\n"))
        .filter_map(|e| {
            let data: Vec<&str> = e
                .lines()
                .filter_map(|l| {
                    l.strip_prefix("data:")
                        .map(|d| d.strip_prefix(' ').unwrap_or(d))
                })
                .collect();
            (!data.is_empty())
                .then(|| serde_json::from_str(&data.join("\n")).ok())
                .flatten()
        })
        .collect()
}
