//! The proxy's own settings: the `[proxy]` table of the configuration file
//! and, with it, the `[oauth]` table, which together say who the caller is.
//!
//! ```
//! use stateseal_proxy::settings::{PrincipalMode, ProxySettings};
//!
//! let settings = ProxySettings::from_toml(
//!     Some("principal = \"header\"\nprincipal_header = \"x-jwt-payload\"\n"),
//!     None,
//! )?;
//! assert!(matches!(settings.principal(), PrincipalMode::Header(h) if h == "x-jwt-payload"));
//! let bad = ProxySettings::from_toml(Some("principal = \"oauth\""), None).unwrap_err();
//! assert!(bad.to_string().contains("[oauth]"));
//! # Ok::<(), stateseal_proxy::settings::SettingsError>(())
//! ```

use http::HeaderName;
use stateseal_oauth::ResourceServerConfig;

/// The largest request body the proxy reads by default (4 MiB).
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 << 20;
/// The largest server-sent event, and the largest JSON answer, the proxy
/// reads from the upstream by default (4 MiB).
pub const DEFAULT_MAX_EVENT_BYTES: usize = 4 << 20;
/// No bound may be smaller: an MCP message with a 16 KiB state must fit.
const MIN_BOUND: usize = 64 << 10;
/// No bound may be larger: the proxy holds one such message per request.
const MAX_BOUND: usize = 1 << 30;

/// Headers a gateway cannot hand the principal in: the proxy reads or
/// rewrites them itself.
const RESERVED: [&str; 8] = [
    "authorization",
    "host",
    "content-length",
    "content-type",
    "accept",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

/// Who the caller is, whom every state is bound to.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum PrincipalMode {
    /// The bearer JWT, validated as the deployable server validates it
    /// (issuer, audience, the issuer's JWKS): (client, issuer, subject).
    OAuth(ResourceServerConfig),
    /// The claims a trusted gateway in front puts in this header (a JSON
    /// object, or its base64url: Envoy's `forward_payload_header`);
    /// `client_id` (or `azp`), `iss` and `sub`. A client's copy never counts.
    Header(HeaderName),
    /// No caller: states are bound to the round only (logged at start).
    Unbound,
}

/// A setting that cannot be used, named with what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SettingsError(String);

/// The proxy's settings; [`ProxySettings::from_toml`] reads them from the
/// configuration file's tables, [`ProxySettings::new`] starts from defaults.
#[derive(Debug, Clone)]
pub struct ProxySettings {
    principal: PrincipalMode,
    forward_authorization: bool,
    max_body_bytes: usize,
    max_event_bytes: usize,
}

impl ProxySettings {
    /// The defaults for `principal`: unbound, the `Authorization` header not
    /// forwarded, 4 MiB bounds.
    #[must_use]
    pub fn new(principal: PrincipalMode) -> Self {
        Self {
            principal,
            forward_authorization: false,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
        }
    }

    /// Whether the client's `Authorization` header goes upstream (default:
    /// no; a token meant for the proxy's audience is not the upstream's).
    #[must_use]
    pub fn forward_authorization(mut self, forward: bool) -> Self {
        self.forward_authorization = forward;
        self
    }

    /// Bounds on a request body and on one upstream event or JSON answer.
    ///
    /// # Errors
    /// [`SettingsError`] when a bound is outside 64 KiB to 1 GiB.
    pub fn bounds(
        mut self,
        max_body_bytes: usize,
        max_event_bytes: usize,
    ) -> Result<Self, SettingsError> {
        for (name, value) in [
            ("max_body_bytes", max_body_bytes),
            ("max_event_bytes", max_event_bytes),
        ] {
            if !(MIN_BOUND..=MAX_BOUND).contains(&value) {
                return Err(SettingsError(format!(
                    "[proxy] {name} must be between {MIN_BOUND} and {MAX_BOUND} bytes, not {value}"
                )));
            }
        }
        self.max_body_bytes = max_body_bytes;
        self.max_event_bytes = max_event_bytes;
        Ok(self)
    }

    /// The settings of the `[proxy]` and `[oauth]` tables (their contents as
    /// TOML text). `principal` is `"oauth"` (the default with an `[oauth]`
    /// table, which it requires), `"header"` (with `principal_header`) or
    /// `"none"` (the default without `[oauth]`).
    ///
    /// # Errors
    /// [`SettingsError`] naming the setting that is unknown, missing or wrong.
    pub fn from_toml(proxy: Option<&str>, oauth: Option<&str>) -> Result<Self, SettingsError> {
        let table: toml::Table = proxy.unwrap_or("").parse().map_err(|e: toml::de::Error| {
            SettingsError(format!("[proxy] {}", e.message().trim()))
        })?;
        const KNOWN: [&str; 5] = [
            "principal",
            "principal_header",
            "forward_authorization",
            "max_body_bytes",
            "max_event_bytes",
        ];
        if let Some(unknown) = table.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            return Err(SettingsError(format!(
                "[proxy] has no setting {unknown:?} (it has {})",
                KNOWN.join(", ")
            )));
        }
        let text = |key: &str| match table.get(key) {
            None => Ok(None),
            Some(toml::Value::String(s)) => Ok(Some(s.as_str())),
            Some(_) => Err(SettingsError(format!("[proxy] {key} must be a string"))),
        };
        let header = text("principal_header")?;
        let mode = text("principal")?.unwrap_or(if oauth.is_some() { "oauth" } else { "none" });
        if mode != "header" && header.is_some() {
            return Err(SettingsError(format!(
                "[proxy] principal_header is set but principal is {mode:?}: set principal = \"header\" or remove principal_header"
            )));
        }
        if mode != "oauth" && oauth.is_some() {
            return Err(SettingsError(format!(
                "the [oauth] table is set but [proxy] principal is {mode:?}: remove one of them"
            )));
        }
        let principal = match mode {
            "oauth" => {
                let Some(oauth) = oauth else {
                    return Err(SettingsError(
                        "[proxy] principal = \"oauth\" needs an [oauth] table (issuer, audience, jwks_uri)".into(),
                    ));
                };
                PrincipalMode::OAuth(
                    ResourceServerConfig::from_toml(oauth)
                        .map_err(|e| SettingsError(format!("[oauth] {e}")))?,
                )
            }
            "header" => PrincipalMode::Header(principal_header(header)?),
            "none" => PrincipalMode::Unbound,
            other => {
                return Err(SettingsError(format!(
                    "[proxy] principal must be \"oauth\", \"header\" or \"none\", not {other:?}"
                )));
            }
        };
        let forward = match table.get("forward_authorization") {
            None => false,
            Some(toml::Value::Boolean(b)) => *b,
            Some(_) => {
                return Err(SettingsError(
                    "[proxy] forward_authorization must be true or false".into(),
                ));
            }
        };
        let bytes = |key: &str, default: usize| match table.get(key) {
            None => Ok(default),
            Some(toml::Value::Integer(i)) => usize::try_from(*i).map_err(|_| {
                SettingsError(format!(
                    "[proxy] {key} must be between {MIN_BOUND} and {MAX_BOUND} bytes, not {i}"
                ))
            }),
            Some(_) => Err(SettingsError(format!(
                "[proxy] {key} must be a whole number of bytes"
            ))),
        };
        Self::new(principal).forward_authorization(forward).bounds(
            bytes("max_body_bytes", DEFAULT_MAX_BODY_BYTES)?,
            bytes("max_event_bytes", DEFAULT_MAX_EVENT_BYTES)?,
        )
    }

    /// Who the caller is.
    #[must_use]
    pub fn principal(&self) -> &PrincipalMode {
        &self.principal
    }

    /// Whether the `Authorization` header goes upstream.
    #[must_use]
    pub fn forwards_authorization(&self) -> bool {
        self.forward_authorization
    }

    /// The largest request body read.
    #[must_use]
    pub fn max_body_bytes(&self) -> usize {
        self.max_body_bytes
    }

    /// The largest upstream event or JSON answer read.
    #[must_use]
    pub fn max_event_bytes(&self) -> usize {
        self.max_event_bytes
    }
}

fn principal_header(name: Option<&str>) -> Result<HeaderName, SettingsError> {
    let Some(name) = name else {
        return Err(SettingsError(
            "[proxy] principal = \"header\" needs principal_header, the header your gateway sets (e.g. \"x-jwt-payload\")".into(),
        ));
    };
    let header = HeaderName::try_from(name).map_err(|_| {
        SettingsError(format!(
            "[proxy] principal_header {name:?} is no HTTP header name"
        ))
    })?;
    if RESERVED.contains(&header.as_str()) {
        return Err(SettingsError(format!(
            "[proxy] principal_header cannot be {name:?}: the proxy reads that header itself"
        )));
    }
    Ok(header)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(proxy: &str, oauth: Option<&str>) -> String {
        ProxySettings::from_toml(Some(proxy), oauth)
            .expect_err(proxy)
            .to_string()
    }

    const OAUTH: &str = "issuer = \"https://as.example\"\naudience = \"https://mcp.example/mcp\"\njwks_uri = \"https://as.example/jwks\"\n";

    #[test]
    fn the_principal_defaults_to_the_tables_present() {
        let none = ProxySettings::from_toml(None, None).expect("defaults");
        assert!(matches!(none.principal(), PrincipalMode::Unbound));
        assert!(!none.forwards_authorization());
        assert_eq!(none.max_body_bytes(), DEFAULT_MAX_BODY_BYTES);
        let oauth = ProxySettings::from_toml(None, Some(OAUTH)).expect("oauth");
        assert!(matches!(oauth.principal(), PrincipalMode::OAuth(_)));
    }

    #[test]
    fn every_bad_setting_is_named() {
        for (proxy, oauth, words) in [
            ("principl = \"none\"", None, "no setting \"principl\""),
            (
                "principal = \"jwt\"",
                None,
                "must be \"oauth\", \"header\" or \"none\", not \"jwt\"",
            ),
            ("principal = \"oauth\"", None, "needs an [oauth] table"),
            (
                "principal = \"none\"",
                Some(OAUTH),
                "[oauth] table is set but [proxy] principal is \"none\"",
            ),
            ("principal = \"header\"", None, "needs principal_header"),
            (
                "principal = \"header\"\nprincipal_header = \"Authorization\"",
                None,
                "cannot be \"Authorization\"",
            ),
            (
                "principal = \"header\"\nprincipal_header = \"x y\"",
                None,
                "is no HTTP header name",
            ),
            (
                "principal_header = \"x-user\"",
                None,
                "principal is \"none\"",
            ),
            (
                "forward_authorization = \"yes\"",
                None,
                "forward_authorization must be true or false",
            ),
            (
                "max_body_bytes = 10",
                None,
                "max_body_bytes must be between 65536 and 1073741824 bytes, not 10",
            ),
            (
                "max_event_bytes = -1",
                None,
                "max_event_bytes must be between",
            ),
            (
                "max_event_bytes = 1.5",
                None,
                "max_event_bytes must be a whole number",
            ),
            ("principal = [", None, "[proxy]"),
        ] {
            let e = refused(proxy, oauth);
            assert!(e.contains(words), "{proxy}: {e}");
        }
        let e = refused(
            "principal = \"oauth\"",
            Some("issuer = \"https://as.example\""),
        );
        assert!(
            e.starts_with("[oauth] invalid configuration: audience"),
            "{e}"
        );
    }
}
