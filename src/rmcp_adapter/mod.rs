//! The rmcp adapter (feature `rmcp`): `StateSealed<H>` wraps any rmcp
//! `ServerHandler`, verifies every echoed `requestState` before the handler
//! runs, and seals every `requestState` the handler returns.
//!
//! Handlers keep writing plaintext states
//! (`InputRequiredResult::from_request_state("step-2")`) and reading them
//! through rmcp's `RequestState` extractor; only this wrapper touches tokens.
//! Every other `ServerHandler` method is forwarded unchanged.

mod forward;

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;

use rmcp::ErrorData as McpError;
use rmcp::ServerHandler;
use rmcp::model::*;
use rmcp::service::{
    MaybeSendFuture, NotificationContext, RequestContext, RoleServer, SubscriptionContext,
};

use self::forward::forward_server_handler;
use crate::boundary::{AuthenticatedPrincipal, Boundary, PrincipalResult, WireError};
use crate::envelope::RequestIdentity;

/// Where the caller's identity comes from, for binding states to it.
///
/// A source that fails denies: verification answers `-32602`, sealing `-32603`.
/// Never derive identity from `_meta`: the client writes it.
pub trait PrincipalSource: Send + Sync + 'static {
    /// The authenticated principal of the request, `Ok(None)` when unauthenticated.
    fn principal(&self, context: &RequestContext<RoleServer>) -> PrincipalResult;
}

/// The default source: an [`AuthenticatedPrincipal`] that the HTTP auth layer
/// inserted into the request's extensions (rmcp's streamable-HTTP transport
/// passes the `http::request::Parts` on). Stdio and unauthenticated HTTP requests are unbound.
#[derive(Debug, Clone, Copy, Default)]
pub struct HttpAuthPrincipal;

impl PrincipalSource for HttpAuthPrincipal {
    fn principal(&self, context: &RequestContext<RoleServer>) -> PrincipalResult {
        Ok(context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<AuthenticatedPrincipal>())
            .map(AuthenticatedPrincipal::to_principal))
    }
}

/// An rmcp `ServerHandler` with `requestState` sealed at the boundary.
///
/// ```no_run
/// # use std::sync::Arc;
/// # use stateseal::{Envelope, KeyRing, RingHandle, Secret, boundary::Boundary};
/// use stateseal::rmcp_adapter::StateSealed;
/// # #[derive(Clone)] struct MyServer;
/// # impl rmcp::ServerHandler for MyServer {}
/// # let ring = Arc::new(RingHandle::new(KeyRing::from_secrets(&[Secret::generate()?])?));
/// let envelope = Envelope::builder(ring, Some("my-server")).build()?;
/// let handler = StateSealed::new(MyServer, Boundary::new(Arc::new(envelope)));
/// # Ok::<(), stateseal::Error>(())
/// ```
pub struct StateSealed<H> {
    inner: H,
    boundary: Arc<Boundary>,
    principals: Arc<dyn PrincipalSource>,
}

impl<H: Clone> Clone for StateSealed<H> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            boundary: self.boundary.clone(),
            principals: self.principals.clone(),
        }
    }
}

impl<H> std::fmt::Debug for StateSealed<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateSealed")
            .field("boundary", &self.boundary)
            .finish_non_exhaustive()
    }
}

impl<H> StateSealed<H> {
    /// Wraps `inner`; principals come from [`HttpAuthPrincipal`].
    pub fn new(inner: H, boundary: Boundary) -> Self {
        Self {
            inner,
            boundary: Arc::new(boundary),
            principals: Arc::new(HttpAuthPrincipal),
        }
    }

    /// Replaces the principal source.
    pub fn with_principal_source(mut self, source: impl PrincipalSource) -> Self {
        self.principals = Arc::new(source);
        self
    }

    /// The wrapped handler.
    pub fn inner(&self) -> &H {
        &self.inner
    }

    /// The boundary.
    pub fn boundary(&self) -> &Boundary {
        &self.boundary
    }
}

fn to_mcp(e: WireError) -> McpError {
    McpError::new(ErrorCode(e.code), e.message, e.data)
}

impl<H: ServerHandler> StateSealed<H> {
    /// Verifies the echo in place (recording a single-use state); returns
    /// the principal for sealing.
    async fn open(
        &self,
        round: &RequestIdentity,
        request_state: &mut Option<String>,
        context: &RequestContext<RoleServer>,
    ) -> Result<PrincipalResult, McpError> {
        let principal = self.principals.principal(context);
        *request_state = self
            .boundary
            .admit(round, request_state.as_deref(), &principal)
            .await
            .map_err(to_mcp)?;
        Ok(principal)
    }

    fn seal(
        &self,
        round: &RequestIdentity,
        result: &mut InputRequiredResult,
        principal: &PrincipalResult,
    ) -> Result<(), McpError> {
        if let Some(state) = result.request_state.take() {
            result.request_state = Some(
                self.boundary
                    .seal(round, &state, principal)
                    .map_err(to_mcp)?,
            );
        }
        Ok(())
    }
}

// Forwarding must include the methods rmcp deprecated: a client may still call them.
#[allow(deprecated)]
impl<H: ServerHandler> ServerHandler for StateSealed<H> {
    async fn call_tool(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let round =
            RequestIdentity::for_call("tools/call", &request.name, request.arguments.as_ref());
        let principal = self
            .open(&round, &mut request.request_state, &context)
            .await?;
        match self.inner.call_tool(request, context).await? {
            CallToolResponse::InputRequired(mut result) => {
                self.seal(&round, &mut result, &principal)?;
                Ok(CallToolResponse::InputRequired(result))
            }
            other => Ok(other),
        }
    }

    async fn get_prompt(
        &self,
        mut request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let round =
            RequestIdentity::for_call("prompts/get", &request.name, request.arguments.as_ref());
        let principal = self
            .open(&round, &mut request.request_state, &context)
            .await?;
        match self.inner.get_prompt(request, context).await? {
            GetPromptResponse::InputRequired(mut result) => {
                self.seal(&round, &mut result, &principal)?;
                Ok(GetPromptResponse::InputRequired(result))
            }
            other => Ok(other),
        }
    }

    async fn read_resource(
        &self,
        mut request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let round = RequestIdentity::for_call("resources/read", &request.uri, None);
        let principal = self
            .open(&round, &mut request.request_state, &context)
            .await?;
        match self.inner.read_resource(request, context).await? {
            ReadResourceResponse::InputRequired(mut result) => {
                self.seal(&round, &mut result, &principal)?;
                Ok(ReadResourceResponse::InputRequired(result))
            }
            other => Ok(other),
        }
    }

    forward_server_handler!();
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::PathBuf;

    use proc_macro2::{Delimiter, TokenTree};
    use syn::parse::Parser;

    /// Names of the `fn` items in the body of `macro_rules! name { () => { … } }`,
    /// parsed as Rust (so rmcp's formatting, comments and attributes do not matter).
    fn macro_fns(source: &str, name: &str) -> BTreeSet<String> {
        let file = syn::parse_file(source).expect("parse");
        let mac = file
            .items
            .iter()
            .find_map(|item| match item {
                syn::Item::Macro(m) if m.ident.as_ref().is_some_and(|i| i == name) => Some(m),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no macro_rules! {name}"));
        let body = mac
            .mac
            .tokens
            .clone()
            .into_iter()
            .find_map(|t| match t {
                TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => Some(g.stream()),
                _ => None,
            })
            .expect("macro body");
        let items = (|input: syn::parse::ParseStream<'_>| {
            let mut items = Vec::new();
            while !input.is_empty() {
                items.push(input.parse::<syn::TraitItem>()?);
            }
            Ok(items)
        })
        .parse2(body)
        .expect("macro body items");
        items
            .into_iter()
            .filter_map(|item| match item {
                syn::TraitItem::Fn(f) => Some(f.sig.ident.to_string()),
                _ => None,
            })
            .collect()
    }

    /// Names of the methods in `impl ServerHandler for …` blocks of `source`.
    fn impl_fns(source: &str) -> BTreeSet<String> {
        let file = syn::parse_file(source).expect("parse");
        file.items
            .iter()
            .filter_map(|item| match item {
                syn::Item::Impl(i)
                    if i.trait_.as_ref().is_some_and(|(_, path, _)| {
                        path.segments
                            .last()
                            .is_some_and(|s| s.ident == "ServerHandler")
                    }) =>
                {
                    Some(i.items.iter().filter_map(|it| match it {
                        syn::ImplItem::Fn(f) => Some(f.sig.ident.to_string()),
                        _ => None,
                    }))
                }
                _ => None,
            })
            .flatten()
            .collect()
    }

    fn rmcp_server_source() -> String {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
        let out = std::process::Command::new(cargo)
            .args([
                "metadata",
                "--format-version",
                "1",
                "--all-features",
                "--manifest-path",
                manifest,
            ])
            .output()
            .expect("cargo metadata");
        let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata json");
        let rmcp = meta["packages"]
            .as_array()
            .expect("packages")
            .iter()
            .find(|p| p["name"] == "rmcp")
            .expect("rmcp package");
        let dir = PathBuf::from(rmcp["manifest_path"].as_str().expect("path"))
            .parent()
            .expect("dir")
            .to_path_buf();
        std::fs::read_to_string(dir.join("src/handler/server.rs")).expect("rmcp server.rs")
    }

    /// Fails when rmcp's `ServerHandler` grows a method this wrapper does not
    /// forward (an unforwarded method would silently run rmcp's default).
    #[test]
    fn rmcp_wrapper_forwards_every_method() {
        let theirs = macro_fns(&rmcp_server_source(), "server_handler_methods");
        assert!(theirs.len() > 20, "found only {theirs:?}");
        let mut ours = macro_fns(include_str!("forward.rs"), "forward_server_handler");
        ours.extend(impl_fns(include_str!("mod.rs")));
        assert!(
            ours.contains("call_tool") && ours.contains("ping"),
            "{ours:?}"
        );
        let missing: Vec<&String> = theirs.difference(&ours).collect();
        assert!(
            missing.is_empty(),
            "StateSealed does not forward rmcp ServerHandler methods: {missing:?}"
        );
    }
}
