//! An OAuth 2.1 resource server for MCP servers (the MCP authorization
//! specification): every request carries a JWT access token, checked against
//! the authorization server's published keys, and the caller it names becomes
//! the [`AuthenticatedPrincipal`] that stateseal binds `requestState` to.
//!
//! A token is accepted only when, in this order: it is at most 8 KiB and a
//! JWS in compact form; its header names an allowed asymmetric algorithm
//! (never `none`, never HMAC: the issuer's public key must not double as a
//! shared secret) and a key id; the key with that id is in the issuer's JWKS
//! (fetched over https, cached, refreshed on an unknown key id at most once
//! per [`ResourceServerConfig::unknown_kid_refresh`]) and is of that
//! algorithm; the signature verifies; `iss` is the configured issuer and
//! `aud` names this resource; `exp` is in the future and `nbf`, if present,
//! in the past, both within [`ResourceServerConfig::leeway`] on this
//! server's [`Clock`]; `sub` and `client_id` (or `azp`) are present. Signature,
//! issuer and audience are checked by the `jsonwebtoken` crate; the times by
//! this crate against the clock it is given.
//!
//! A refused request gets `401` with `WWW-Authenticate: Bearer` naming the
//! protected-resource metadata (RFC 9728) and, for a presented token,
//! `error="invalid_token"`. The reason is logged at debug, never the token.
//!
//! ```no_run
//! use std::sync::Arc;
//! use stateseal_oauth::{ResourceServer, ResourceServerConfig};
//!
//! # async fn run() -> Result<(), stateseal_oauth::Error> {
//! let config = ResourceServerConfig::builder()
//!     .issuer("https://auth.example.com")
//!     .audience("https://mcp.example.com/mcp")
//!     .jwks_uri("https://auth.example.com/.well-known/jwks.json")
//!     .resource_metadata("https://mcp.example.com/.well-known/oauth-protected-resource")
//!     .build()?;
//! let server = Arc::new(ResourceServer::new(config)?);
//! let app = axum::Router::<()>::new()
//!     .route("/mcp", axum::routing::post(|| async { "ok" }))
//!     .layer(axum::middleware::from_fn_with_state(
//!         server.clone(),
//!         stateseal_oauth::require_bearer,
//!     ));
//! # let _ = app; Ok(()) }
//! ```
//!
//! [`AuthenticatedPrincipal`]: stateseal::boundary::AuthenticatedPrincipal
//! [`Clock`]: stateseal::Clock

#![forbid(unsafe_code)]

mod config;
mod jwks;
mod layer;
mod validate;

pub use config::{ResourceServerConfig, ResourceServerConfigBuilder};
/// The signature algorithms, as the `jsonwebtoken` crate names them.
pub use jsonwebtoken::Algorithm;
pub use layer::{protected_resource_metadata, require_bearer};
pub use validate::ResourceServer;

/// Why a configuration or a token was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The resource server is misconfigured.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The token is refused; the reason names the check, never the token.
    #[error("invalid token: {0}")]
    InvalidToken(&'static str),
    /// The issuer's keys could not be fetched, so no token can be checked.
    #[error("the issuer's keys are unavailable: {0}")]
    KeysUnavailable(String),
}

#[cfg(test)]
mod tests {
    /// Shared across a server's tasks behind an `Arc`.
    #[test]
    fn the_resource_server_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<super::ResourceServer>();
        check::<super::Error>();
    }
}
