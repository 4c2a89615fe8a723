//! The reverse proxy's request path: `POST` bodies verified on the way in and
//! their answers sealed on the way out, `GET` streams (and their resumption)
//! sealed, `DELETE` forwarded; every header but the hop-by-hop ones (those
//! RFC 9110 lists and those a `Connection` header names), the caller's
//! claims and (unless configured) `Authorization` goes upstream.

mod reply;
mod stream;

use std::sync::Arc;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderName, Method, StatusCode, header};
use serde_json::Value;
use stateseal::boundary::{Boundary, PrincipalResult};

use crate::caller::{Caller, Unidentified};
use crate::inbound::{HEADER_MISMATCH, Inbound, Mirrored, error_response, open_body};
use crate::json_write;
use crate::outbound::{Sealed, may_hold_state, names_state, seal_value};
use crate::pending::Pending;
use crate::rpc_id::RpcId;
use crate::settings::ProxySettings;
use crate::strict::{self, Unreadable};
use reply::{Framing, status_of, upstream_failed};
pub(crate) use stream::Finder;

/// The session header of MCP's streamable HTTP transport.
const SESSION: &str = "mcp-session-id";

/// Headers that belong to one connection, never forwarded (RFC 9110 7.6.1),
/// and those the proxy sets itself.
const NOT_FORWARDED: [&str; 11] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
];

/// What every request of one proxy shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) boundary: Boundary,
    pub(crate) upstream: reqwest::Url,
    pub(crate) client: reqwest::Client,
    pub(crate) settings: ProxySettings,
    pub(crate) caller: Caller,
    pub(crate) pending: Pending,
    /// Off only for the benchmark's baseline: forward everything untouched.
    pub(crate) sealing: bool,
}

/// The handler of the MCP endpoint.
pub(crate) async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let principal = match shared.caller.identify(&request) {
        Ok(p) => p,
        Err(why) => return unidentified(why),
    };
    let method = request.method().clone();
    match method {
        Method::POST => post(shared, request, principal).await,
        Method::GET | Method::DELETE => other(shared, request).await,
        _ => (
            StatusCode::METHOD_NOT_ALLOWED,
            [(header::ALLOW, "GET, POST, DELETE")],
        )
            .into_response(),
    }
}

fn unidentified(why: Unidentified) -> Response {
    metrics::counter!("stateseal_proxy_requests_total", "outcome" => "unidentified").increment(1);
    tracing::warn!(
        ?why,
        "proxy: no caller could be established; request refused"
    );
    StatusCode::UNAUTHORIZED.into_response()
}

async fn post(shared: Arc<Shared>, request: Request, principal: PrincipalResult) -> Response {
    let framing = Framing::of(request.headers());
    let (parts, body) = request.into_parts();
    let limit = shared.settings.max_body_bytes();
    let Ok(bytes) = axum::body::to_bytes(body, limit).await else {
        metrics::counter!("stateseal_proxy_requests_total", "outcome" => "too_large").increment(1);
        let e = error_response(
            Value::Null,
            -32600,
            &format!("Request body larger than {limit} bytes"),
            None,
        );
        return framing.respond(StatusCode::PAYLOAD_TOO_LARGE, vec![e], false);
    };
    if !shared.sealing {
        return match send(&shared, Method::POST, &parts.headers, Some(bytes)).await {
            Ok(r) => pass(r),
            Err(_) => framing.respond(
                StatusCode::BAD_GATEWAY,
                upstream_failed(&[(RpcId::Null, Value::Null)], "unavailable"),
                false,
            ),
        };
    }
    let mirrored = Mirrored::of(&parts.headers);
    let (body, rounds, answers, requests) =
        match open_body(&shared.boundary, &bytes, &principal, &mirrored).await {
            Inbound::Answer(body) => {
                let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let outcome = if value.pointer("/error/code") == Some(&HEADER_MISMATCH.into()) {
                    "header_mismatch"
                } else {
                    "answered"
                };
                metrics::counter!("stateseal_proxy_requests_total", "outcome" => outcome)
                    .increment(1);
                let (messages, batch) = match value {
                    Value::Array(items) => (items, true),
                    one => (vec![one], false),
                };
                let status = messages.first().map_or(StatusCode::OK, status_of);
                return framing.respond(status, messages, batch);
            }
            Inbound::Nothing => return StatusCode::ACCEPTED.into_response(),
            Inbound::Forward {
                body,
                rounds,
                answers,
                requests,
            } => (
                body.map(Bytes::from).unwrap_or(bytes),
                rounds,
                answers,
                requests,
            ),
        };
    metrics::counter!("stateseal_proxy_requests_total", "outcome" => "forwarded").increment(1);
    let batch = body.trim_ascii_start().first() == Some(&b'[');
    let session = session_of(&parts.headers);
    if let Some(s) = &session {
        let now = Instant::now();
        for (id, round) in rounds.iter() {
            shared
                .pending
                .insert_at(s, id.clone(), (round.clone(), principal.clone()), now);
        }
    }
    let upstream = match send(&shared, Method::POST, &parts.headers, Some(body)).await {
        Ok(r) => r,
        Err(e) => {
            metrics::counter!("stateseal_proxy_upstream_failures_total").increment(1);
            tracing::warn!(error = %without_url(&e), "proxy: the upstream cannot be reached");
            let mut messages = upstream_failed(&requests, "unavailable");
            messages.extend(answers);
            return framing.respond(StatusCode::BAD_GATEWAY, messages, batch);
        }
    };
    let find = Finder::for_post(Arc::clone(&shared), rounds, principal, session);
    respond(shared, upstream, find, requests, answers, framing, batch).await
}

/// `GET` (the standalone stream, or a resumed one) and `DELETE`.
async fn other(shared: Arc<Shared>, request: Request) -> Response {
    let method = request.method().clone();
    let session = session_of(request.headers());
    let framing = Framing::of(request.headers());
    let upstream = match send(&shared, method.clone(), request.headers(), None).await {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(error = %without_url(&e), "proxy: the upstream cannot be reached");
            return framing.respond(
                StatusCode::BAD_GATEWAY,
                upstream_failed(&[(RpcId::Null, Value::Null)], "unavailable"),
                false,
            );
        }
    };
    if method == Method::DELETE {
        if let (true, Some(s)) = (upstream.status().is_success(), &session) {
            shared.pending.forget_session(s);
        }
        return pass(upstream);
    }
    if !shared.sealing {
        return pass(upstream);
    }
    let find = Finder::for_get(Arc::clone(&shared), session);
    respond(
        shared,
        upstream,
        find,
        Vec::new(),
        Vec::new(),
        framing,
        false,
    )
    .await
}

/// The upstream's answer, sealed.
async fn respond(
    shared: Arc<Shared>,
    upstream: reqwest::Response,
    mut find: Finder,
    requests: Vec<(RpcId, Value)>,
    answers: Vec<Value>,
    framing: Framing,
    batch: bool,
) -> Response {
    let status = upstream.status();
    let kind = Answered::of(upstream.headers());
    // A JSON error (4xx, 5xx) is read like any answer, keeping its status:
    // it can echo the params the proxy filled with a plaintext state.
    if !status.is_success() && kind != Answered::Json {
        return pass(upstream);
    }
    if encoded(upstream.headers()) {
        // Nobody asked for it, and the proxy cannot see a state inside it.
        let why = "answered with a compressed body";
        return refuse(why, requests, answers, framing, batch);
    }
    if kind == Answered::Events {
        let headers = response_headers(upstream.headers());
        let body = stream::rewrite(shared, upstream, find, requests, answers);
        return with_headers(status, headers, body);
    }
    if kind == Answered::Other && !answers.is_empty() {
        // 202 for the notifications that went on; the refused members' answers are due.
        return framing.respond(StatusCode::OK, answers, true);
    }
    let headers = response_headers(upstream.headers());
    let limit = shared.settings.max_event_bytes();
    let body = match read_bounded(upstream, limit).await {
        Ok(b) => b,
        Err(why) => return refuse(why, requests, answers, framing, batch),
    };
    let may_hold = if kind == Answered::Other {
        names_state(&body)
    } else {
        may_hold_state(&body)
    };
    if answers.is_empty() && !may_hold {
        return with_headers(status, headers, Body::from(body));
    }
    if kind == Answered::Other {
        // No client reads it, but a state in it would still reach the client in plaintext.
        let why = "answered with a state under a type that is neither JSON nor events";
        return refuse(why, requests, answers, framing, batch);
    }
    let mut value = match strict::from_slice(&body) {
        Ok(value) => value,
        // A lenient client parser (NaN, comments, the first of two members)
        // could read a state nobody sealed.
        Err(Unreadable::NotJson) => {
            let why = "answered with a body that is not JSON";
            return refuse(why, requests, answers, framing, batch);
        }
        Err(Unreadable::Duplicate) => {
            let why = "answered with JSON that names a member twice";
            return refuse(why, requests, answers, framing, batch);
        }
    };
    let sealed = seal_value(&shared.boundary, &mut value, &mut |id| find.find(id));
    if sealed == Sealed::Untouched && answers.is_empty() {
        return with_headers(status, headers, Body::from(body));
    }
    if !answers.is_empty() {
        let mut items = match value {
            Value::Array(items) => items,
            one => vec![one],
        };
        items.extend(answers);
        value = Value::Array(items);
    }
    with_headers(
        status,
        headers,
        Body::from(json_write::to_vec(&value, body.len())),
    )
}

/// An answer the proxy will not pass (`why` says how the upstream
/// answered, never what): `502`, an error to each request it owed, and the
/// proxy's own answers to a batch's refused members.
fn refuse(
    why: &str,
    requests: Vec<(RpcId, Value)>,
    answers: Vec<Value>,
    framing: Framing,
    batch: bool,
) -> Response {
    tracing::warn!("proxy: the upstream {why}; refused");
    let mut messages = upstream_failed(&owed(requests), why);
    messages.extend(answers);
    framing.respond(StatusCode::BAD_GATEWAY, messages, batch)
}

/// The ids an error answers: the requests', or `null` for a stream that
/// answers none (a `GET`), so the client is told something.
fn owed(requests: Vec<(RpcId, Value)>) -> Vec<(RpcId, Value)> {
    if requests.is_empty() {
        vec![(RpcId::Null, Value::Null)]
    } else {
        requests
    }
}

/// Whether an answer's body is compressed (any `Content-Encoding` but `identity`).
fn encoded(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::CONTENT_ENCODING)
        .iter()
        .any(|v| !v.as_bytes().trim_ascii().eq_ignore_ascii_case(b"identity"))
}

/// Reads a body of at most `limit` bytes.
async fn read_bounded(
    mut upstream: reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, &'static str> {
    let mut body = Vec::new();
    loop {
        match upstream.chunk().await {
            Ok(Some(chunk)) if body.len() + chunk.len() > limit => {
                return Err("answered with a body larger than max_event_bytes");
            }
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            Ok(None) => return Ok(body),
            Err(_) => return Err("failed before its answer ended"),
        }
    }
}

/// Sends a request upstream with the client's headers (those that may go).
async fn send(
    shared: &Shared,
    method: Method,
    headers: &HeaderMap,
    body: Option<Bytes>,
) -> Result<reqwest::Response, reqwest::Error> {
    let mut out = HeaderMap::new();
    let nominated = nominated(headers);
    for (name, value) in headers {
        if forwarded(shared, name) && !nominated.contains(name) {
            out.append(name.clone(), value.clone());
        }
    }
    let mut request = shared
        .client
        .request(method, shared.upstream.clone())
        .headers(out);
    if let Some(body) = body {
        request = request.body(body);
    }
    request.send().await
}

fn forwarded(shared: &Shared, name: &HeaderName) -> bool {
    let n = name.as_str();
    !(NOT_FORWARDED.contains(&n)
        // The proxy reads bodies: they come uncompressed.
        || n == "accept-encoding"
        || (n == "authorization" && !shared.settings.forwards_authorization())
        || shared.caller.header() == Some(name))
}

/// The upstream's headers that go to the client.
fn response_headers(headers: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::new();
    let nominated = nominated(headers);
    for (name, value) in headers {
        if !NOT_FORWARDED.contains(&name.as_str()) && !nominated.contains(name) {
            out.append(name.clone(), value.clone());
        }
    }
    out
}

/// The headers a message's `Connection` names: options of that one
/// connection, which a proxy removes (RFC 9110 7.6.1).
fn nominated(headers: &HeaderMap) -> Vec<HeaderName> {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .flat_map(|v| v.as_bytes().split(|b| *b == b','))
        .filter_map(|t| HeaderName::from_bytes(t.trim_ascii()).ok())
        .collect()
}

fn with_headers(status: StatusCode, headers: HeaderMap, body: Body) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// The upstream's answer as it came.
fn pass(upstream: reqwest::Response) -> Response {
    let status = upstream.status();
    let mut headers = response_headers(upstream.headers());
    // The body goes on unchanged: its length too, so the client need not wait
    // for a chunked stream's last chunk.
    if let Some(length) = upstream.headers().get(header::CONTENT_LENGTH) {
        headers.insert(header::CONTENT_LENGTH, length.clone());
    }
    with_headers(status, headers, Body::from_stream(upstream.bytes_stream()))
}

/// What an answer is, as the most lenient MCP client reads its type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answered {
    /// A JSON body.
    Json,
    /// An event stream.
    Events,
    /// Anything else, which no client reads as either.
    Other,
}

impl Answered {
    /// The Python SDK's client takes any `Content-Type` that starts with
    /// `application/json` (or `text/event-stream`), in any case, whatever
    /// bytes follow, so `application/json-seq` is JSON to it: the proxy
    /// reads (and seals) every answer a client could read, so no state
    /// reaches one unsealed under a type the proxy passed.
    fn of(headers: &HeaderMap) -> Self {
        let Some(value) = headers.get(header::CONTENT_TYPE) else {
            return Self::Other;
        };
        let value = value.as_bytes().trim_ascii_start().to_ascii_lowercase();
        if value.starts_with(b"text/event-stream") {
            Self::Events
        } else if value.starts_with(b"application/json") {
            Self::Json
        } else {
            Self::Other
        }
    }
}

fn session_of(headers: &HeaderMap) -> Option<String> {
    headers
        .get(SESSION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// A client error's text without its URL (which could carry credentials).
fn without_url(e: &reqwest::Error) -> String {
    let kind = if e.is_connect() {
        "cannot connect"
    } else if e.is_timeout() {
        "timed out"
    } else {
        "request failed"
    };
    kind.to_owned()
}
