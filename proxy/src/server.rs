//! The proxy as a service: [`Proxy::builder`] checks what it is given and
//! [`Proxy::router`] is the axum router serving `/mcp` (and, with OAuth, the
//! protected-resource metadata), ready for [`axum::serve`].

use std::sync::Arc;
use std::time::Duration;

use axum::http::header;
use stateseal::boundary::Boundary;
use stateseal_oauth::{ResourceServer, protected_resource_metadata, require_bearer};

use crate::caller::Caller;
use crate::forward::{Shared, handle};
use crate::pending::Pending;
use crate::settings::{PrincipalMode, ProxySettings};

/// How long connecting to the upstream may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a proxy cannot be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProxyError {
    /// The upstream URL is not an `http` or `https` URL with a host.
    #[error("--upstream {url:?}: {why}")]
    Upstream {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        why: String,
    },
    /// The OAuth resource server cannot be built from the settings.
    #[error("[oauth] {0}")]
    OAuth(#[from] stateseal_oauth::Error),
    /// The HTTP client cannot be built.
    #[error("cannot build the upstream client: {0}")]
    Client(String),
}

/// A sealing reverse proxy in front of one MCP server.
///
/// ```
/// use std::sync::Arc;
/// use stateseal::boundary::Boundary;
/// use stateseal::{Envelope, KeyRing, RingHandle};
/// use stateseal_proxy::Proxy;
/// use stateseal_proxy::settings::{PrincipalMode, ProxySettings};
///
/// let ring = Arc::new(RingHandle::new(KeyRing::ephemeral()?));
/// let boundary = Boundary::new(Arc::new(Envelope::builder(ring, Some("svc")).build()?));
/// let proxy = Proxy::builder(boundary, "http://127.0.0.1:3000/mcp")
///     .settings(ProxySettings::new(PrincipalMode::Unbound))
///     .build()
///     .expect("a valid upstream");
/// let app = proxy.router(); // axum::serve(listener, app)
/// # let _ = app;
/// assert!(Proxy::check_upstream("ftp://x").is_err());
/// # Ok::<(), stateseal::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Proxy {
    shared: Arc<Shared>,
    oauth: Option<Arc<ResourceServer>>,
}

/// Builds a [`Proxy`].
#[derive(Debug)]
#[must_use]
pub struct ProxyBuilder {
    boundary: Boundary,
    upstream: String,
    settings: ProxySettings,
    sealing: bool,
}

impl Proxy {
    /// A proxy sealing with `boundary` in front of the MCP endpoint `upstream`
    /// (e.g. `http://127.0.0.1:3000/mcp`).
    pub fn builder(boundary: Boundary, upstream: impl Into<String>) -> ProxyBuilder {
        ProxyBuilder {
            boundary,
            upstream: upstream.into(),
            settings: ProxySettings::new(PrincipalMode::Unbound),
            sealing: true,
        }
    }

    /// The boundary every state goes through.
    #[must_use]
    pub fn boundary(&self) -> &Boundary {
        &self.shared.boundary
    }

    /// The router: `/mcp` (any other path is `404`), and with OAuth
    /// `/.well-known/oauth-protected-resource`.
    pub fn router(&self) -> axum::Router {
        let mcp = axum::Router::new()
            .route("/mcp", axum::routing::any(handle))
            .with_state(Arc::clone(&self.shared));
        let Some(oauth) = &self.oauth else {
            return mcp;
        };
        let metadata = protected_resource_metadata(oauth).to_string();
        mcp.layer(axum::middleware::from_fn_with_state(
            Arc::clone(oauth),
            require_bearer,
        ))
        .route(
            "/.well-known/oauth-protected-resource",
            axum::routing::get(move || {
                std::future::ready(([(header::CONTENT_TYPE, "application/json")], metadata))
            }),
        )
    }

    /// The upstream URL `url` parsed, or why it cannot be one: an `http` or
    /// `https` URL with a host and no credentials.
    ///
    /// # Errors
    /// [`ProxyError::Upstream`] saying what is wrong.
    pub fn check_upstream(url: &str) -> Result<reqwest::Url, ProxyError> {
        // Never echo a URL that may hold credentials: what cannot be parsed is not shown.
        let upstream = reqwest::Url::parse(url).map_err(|e| ProxyError::Upstream {
            url: "(not shown)".to_owned(),
            why: format!("not a URL ({e})"),
        })?;
        let mut shown = upstream.clone();
        let _ = shown.set_username("");
        let _ = shown.set_password(None);
        let bad = |why: &str| ProxyError::Upstream {
            url: shown.to_string(),
            why: why.to_owned(),
        };
        if !matches!(upstream.scheme(), "http" | "https") || upstream.host_str().is_none() {
            return Err(bad(
                "expected an http:// or https:// URL such as http://127.0.0.1:3000/mcp",
            ));
        }
        if !upstream.username().is_empty() || upstream.password().is_some() {
            return Err(bad("credentials do not belong in the URL"));
        }
        Ok(upstream)
    }
}

impl ProxyBuilder {
    /// The principal mode, bounds and header policy (default: unbound).
    pub fn settings(mut self, settings: ProxySettings) -> Self {
        self.settings = settings;
        self
    }

    /// Whether states are sealed and verified (default: yes). Off, the proxy
    /// forwards everything untouched: only the benchmark's baseline uses it.
    pub fn sealing(mut self, sealing: bool) -> Self {
        self.sealing = sealing;
        self
    }

    /// The proxy.
    ///
    /// # Errors
    /// [`ProxyError`] naming the setting to fix.
    pub fn build(self) -> Result<Proxy, ProxyError> {
        let bad = |why: &str| ProxyError::Upstream {
            url: self.upstream.clone(),
            why: why.to_owned(),
        };
        let upstream = reqwest::Url::parse(&self.upstream).map_err(|e| bad(&e.to_string()))?;
        if !matches!(upstream.scheme(), "http" | "https") || upstream.host_str().is_none() {
            return Err(bad(
                "expected an http:// or https:// URL such as http://127.0.0.1:3000/mcp",
            ));
        }
        if !upstream.username().is_empty() || upstream.password().is_some() {
            return Err(bad("credentials do not belong in the URL"));
        }
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .connect_timeout(CONNECT_TIMEOUT)
            .tcp_nodelay(true)
            // The proxy reads answers as they came: never asks for, nor
            // decodes, a compressed one, whatever another crate's features
            // turn on (a compressed answer is refused, see `forward`).
            .no_gzip()
            .no_brotli()
            .no_deflate()
            .no_zstd()
            .build()
            .map_err(|e| ProxyError::Client(e.to_string()))?;
        let oauth = match self.settings.principal() {
            PrincipalMode::OAuth(config) => Some(Arc::new(ResourceServer::new(config.clone())?)),
            _ => None,
        };
        let caller = Caller::from_mode(self.settings.principal());
        Ok(Proxy {
            shared: Arc::new(Shared {
                boundary: self.boundary,
                upstream,
                client,
                settings: self.settings,
                caller,
                pending: Pending::default(),
                sealing: self.sealing,
            }),
            oauth,
        })
    }
}
