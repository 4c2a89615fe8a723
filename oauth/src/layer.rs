//! The axum middleware: a request with a valid bearer token goes on with its
//! [`AuthenticatedPrincipal`] in its extensions (where stateseal's rmcp
//! adapter reads it); any other gets `401` and a `WWW-Authenticate` challenge.
//!
//! [`AuthenticatedPrincipal`]: stateseal::boundary::AuthenticatedPrincipal

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::Error;
use crate::validate::ResourceServer;

/// The token of an `Authorization: Bearer <token>` header (the scheme is
/// case-insensitive, RFC 9110), if there is exactly one such header.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let value = values.next()?.to_str().ok()?;
    if values.next().is_some() {
        return None;
    }
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// A `401` with the challenge RFC 6750 and RFC 9728 describe.
fn challenge(server: &ResourceServer, refused: Option<&Error>) -> Response {
    let mut value = String::from("Bearer");
    let mut params = Vec::new();
    if let Some(url) = &server.config().resource_metadata {
        params.push(format!("resource_metadata=\"{url}\""));
    }
    if let Some(Error::InvalidToken(reason)) = refused {
        params.push("error=\"invalid_token\"".into());
        params.push(format!("error_description=\"{reason}\""));
    }
    if !params.is_empty() {
        value.push(' ');
        value.push_str(&params.join(", "));
    }
    let mut response = StatusCode::UNAUTHORIZED.into_response();
    if let Ok(v) = HeaderValue::from_str(&value) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    response
}

/// Middleware for [`axum::middleware::from_fn_with_state`]: authenticates
/// every request with `server`.
///
/// A missing or refused token gets `401` with `WWW-Authenticate`; when the
/// issuer's keys were never fetched, `503` with `Retry-After`. The refusal's
/// reason is logged at debug level; the token never is.
pub async fn require_bearer(
    State(server): State<Arc<ResourceServer>>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(token) = bearer(request.headers()) else {
        return challenge(&server, None);
    };
    match server.authenticate(token).await {
        Ok(principal) => {
            request.extensions_mut().insert(principal);
            next.run(request).await
        }
        Err(Error::KeysUnavailable(e)) => {
            tracing::warn!(error = %e, "no request can be authenticated: the issuer's keys are unavailable");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "5")],
            )
                .into_response()
        }
        Err(e) => {
            tracing::debug!(reason = %e, "bearer token refused");
            challenge(&server, Some(&e))
        }
    }
}

/// The protected-resource metadata (RFC 9728) to serve at
/// `/.well-known/oauth-protected-resource`: this resource and its issuer.
pub fn protected_resource_metadata(server: &ResourceServer) -> serde_json::Value {
    serde_json::json!({
        "resource": server.config().audience,
        "authorization_servers": [server.config().issuer],
        "bearer_methods_supported": ["header"],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_one_bearer_header_counts() {
        let mut h = HeaderMap::new();
        assert_eq!(bearer(&h), None);
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("bearer abc"),
        );
        assert_eq!(bearer(&h), Some("abc"));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic abc"));
        assert_eq!(bearer(&h), None);
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer "));
        assert_eq!(bearer(&h), None);
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer a"));
        h.append(header::AUTHORIZATION, HeaderValue::from_static("Bearer b"));
        assert_eq!(bearer(&h), None, "two tokens: which one?");
    }
}
