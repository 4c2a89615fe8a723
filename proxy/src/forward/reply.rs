//! The answers the proxy gives itself: in the framing the client asked for
//! (a JSON body, or a one-event stream for a client that accepts only
//! server-sent events), and the JSON-RPC errors that say the upstream failed.

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::Value;

use crate::inbound::{HEADER_MISMATCH, error_response};
use crate::rpc_id::RpcId;

/// The code of every error that says the upstream failed (a server error
/// of JSON-RPC's implementation-defined range).
pub(crate) const UPSTREAM_ERROR: i32 = -32000;

/// How the client wants answers framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// `application/json`.
    Json,
    /// `text/event-stream`, one event per message.
    Sse,
}

impl Framing {
    /// JSON unless the client's `Accept` names server-sent events and no JSON.
    pub(crate) fn of(headers: &HeaderMap) -> Self {
        let accept: Vec<String> = headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(|t| {
                t.split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase()
            })
            .collect();
        let json = accept.is_empty()
            || accept
                .iter()
                .any(|t| matches!(t.as_str(), "application/json" | "application/*" | "*/*"));
        if !json && accept.iter().any(|t| t == "text/event-stream") {
            Self::Sse
        } else {
            Self::Json
        }
    }

    /// `messages` (one, or a batch when `batch`) with `status`.
    pub(crate) fn respond(self, status: StatusCode, messages: Vec<Value>, batch: bool) -> Response {
        match self {
            Self::Json => {
                let body = match (batch, messages.len()) {
                    (false, 1) => serde_json::to_vec(&messages[0]),
                    _ => serde_json::to_vec(&messages),
                }
                .unwrap_or_default();
                (
                    status,
                    [(
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("application/json"),
                    )],
                    body,
                )
                    .into_response()
            }
            Self::Sse => {
                let mut body = Vec::new();
                for m in &messages {
                    body.extend_from_slice(&event(m));
                }
                let headers = [
                    (
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("text/event-stream"),
                    ),
                    (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
                ];
                (status, headers, Body::from(body)).into_response()
            }
        }
    }
}

/// One server-sent event carrying `message`.
pub(crate) fn event(message: &Value) -> Vec<u8> {
    let mut out = b"event: message\ndata: ".to_vec();
    out.extend_from_slice(&serde_json::to_vec(message).unwrap_or_default());
    out.extend_from_slice(b"\n\n");
    out
}

/// The error to each of `ids` saying the upstream failed (`why` names how,
/// never what it said).
pub(crate) fn upstream_failed(ids: &[(RpcId, Value)], why: &str) -> Vec<Value> {
    ids.iter()
        .map(|(_, id)| {
            error_response(
                id.clone(),
                UPSTREAM_ERROR,
                &format!("upstream MCP server {why}"),
                None,
            )
        })
        .collect()
}

/// The status of the proxy's own answer: `400` for a body it could not read
/// as JSON-RPC or whose headers do not mirror it, else `200` (a refused
/// state is an answer to a valid request).
pub(crate) fn status_of(answer: &Value) -> StatusCode {
    let code = answer.pointer("/error/code").and_then(Value::as_i64);
    if code == Some(i64::from(HEADER_MISMATCH)) {
        // The transport's status for headers that do not mirror the body.
        StatusCode::BAD_REQUEST
    } else if matches!(code, Some(-32700 | -32600)) && answer.get("id") == Some(&Value::Null) {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framing(accept: &[&str]) -> Framing {
        let mut h = HeaderMap::new();
        for a in accept {
            h.append(header::ACCEPT, a.parse().expect("value"));
        }
        Framing::of(&h)
    }

    #[test]
    fn json_unless_only_event_streams_are_accepted() {
        assert_eq!(framing(&[]), Framing::Json);
        assert_eq!(
            framing(&["application/json, text/event-stream"]),
            Framing::Json
        );
        assert_eq!(
            framing(&["text/event-stream", "application/json;q=0.5"]),
            Framing::Json
        );
        assert_eq!(framing(&["*/*"]), Framing::Json);
        assert_eq!(framing(&["text/event-stream"]), Framing::Sse);
        assert_eq!(framing(&["Text/Event-Stream; charset=utf-8"]), Framing::Sse);
    }

    #[test]
    fn an_event_is_one_data_line() {
        let e = event(&serde_json::json!({"a": "x\ny"}));
        assert_eq!(e, b"event: message\ndata: {\"a\":\"x\\ny\"}\n\n".to_vec());
    }
}
