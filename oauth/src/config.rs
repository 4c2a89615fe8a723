//! What a resource server trusts: one issuer, one audience, the issuer's key
//! set, the algorithms it may sign with, and how much clock skew to allow.

use std::time::Duration;

use jsonwebtoken::Algorithm;

use crate::Error;

/// The asymmetric algorithms accepted unless configured otherwise. HMAC
/// (`HS*`) is never accepted: a resource server holds only the issuer's
/// public keys, and an HMAC "verified" with one would be forgeable by anyone.
pub(crate) const DEFAULT_ALGORITHMS: [Algorithm; 7] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// The most clock skew a configuration may allow on `exp` and `nbf`.
const MAX_LEEWAY: Duration = Duration::from_secs(300);

/// A resource server's configuration; build it with
/// [`ResourceServerConfig::builder`].
#[derive(Debug, Clone)]
pub struct ResourceServerConfig {
    pub(crate) issuer: String,
    pub(crate) audience: String,
    pub(crate) jwks_uri: String,
    pub(crate) resource_metadata: Option<String>,
    pub(crate) algorithms: Vec<Algorithm>,
    pub(crate) leeway: Duration,
    pub(crate) unknown_kid_refresh: Duration,
    pub(crate) jwks_max_age: Duration,
    pub(crate) fetch_timeout: Duration,
}

impl ResourceServerConfig {
    /// A builder; `issuer`, `audience` and `jwks_uri` are required.
    pub fn builder() -> ResourceServerConfigBuilder {
        ResourceServerConfigBuilder(Self {
            issuer: String::new(),
            audience: String::new(),
            jwks_uri: String::new(),
            resource_metadata: None,
            algorithms: DEFAULT_ALGORITHMS.to_vec(),
            leeway: Duration::from_secs(60),
            unknown_kid_refresh: Duration::from_secs(30),
            jwks_max_age: Duration::from_secs(3600),
            fetch_timeout: Duration::from_secs(5),
        })
    }

    /// The clock skew allowed on `exp` and `nbf`.
    pub fn leeway(&self) -> Duration {
        self.leeway
    }

    /// The shortest time between two key-set fetches caused by unknown key ids.
    pub fn unknown_kid_refresh(&self) -> Duration {
        self.unknown_kid_refresh
    }
}

/// Builds a [`ResourceServerConfig`], checking it in [`build`](Self::build).
#[derive(Debug, Clone)]
pub struct ResourceServerConfigBuilder(ResourceServerConfig);

impl ResourceServerConfigBuilder {
    /// The issuer (`iss`) every token must name, exactly.
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.0.issuer = issuer.into();
        self
    }

    /// This resource's identifier, which every token's `aud` must contain
    /// (the MCP server's canonical URI, RFC 8707).
    pub fn audience(mut self, audience: impl Into<String>) -> Self {
        self.0.audience = audience.into();
        self
    }

    /// Where the issuer publishes its keys: `https://…`, or `http://` to a
    /// loopback address.
    pub fn jwks_uri(mut self, uri: impl Into<String>) -> Self {
        self.0.jwks_uri = uri.into();
        self
    }

    /// This server's protected-resource metadata URL (RFC 9728), named in
    /// every `WWW-Authenticate` challenge.
    pub fn resource_metadata(mut self, url: impl Into<String>) -> Self {
        self.0.resource_metadata = Some(url.into());
        self
    }

    /// The signature algorithms accepted (default: RS256/384/512, PS256,
    /// ES256/384, EdDSA). HMAC algorithms are refused when building.
    pub fn algorithms(mut self, algorithms: &[Algorithm]) -> Self {
        self.0.algorithms = algorithms.to_vec();
        self
    }

    /// The clock skew allowed on `exp` and `nbf` (default 60 s, at most 300 s).
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.0.leeway = leeway;
        self
    }

    /// The shortest time between two key-set fetches caused by tokens naming
    /// a key id not in the cache (default 30 s; anyone can send such a token).
    pub fn unknown_kid_refresh(mut self, every: Duration) -> Self {
        self.0.unknown_kid_refresh = every;
        self
    }

    /// How long a fetched key set is used before it is fetched again (default 1 h).
    pub fn jwks_max_age(mut self, age: Duration) -> Self {
        self.0.jwks_max_age = age;
        self
    }

    /// The time limit of one key-set fetch (default 5 s).
    pub fn fetch_timeout(mut self, timeout: Duration) -> Self {
        self.0.fetch_timeout = timeout;
        self
    }

    /// The checked configuration.
    ///
    /// # Errors
    /// [`Error::Config`] naming the first setting that is missing or wrong.
    pub fn build(self) -> Result<ResourceServerConfig, Error> {
        let c = self.0;
        let bad = |m: String| Err(Error::Config(m));
        if c.issuer.is_empty() {
            return bad("issuer is required".into());
        }
        if c.audience.is_empty() {
            return bad("audience is required (this resource's URI)".into());
        }
        if c.jwks_uri.is_empty() {
            return bad("jwks_uri is required".into());
        }
        stateseal::provider::check_endpoint("jwks_uri", &c.jwks_uri)
            .map_err(|e| Error::Config(e.to_string().replace("invalid configuration: ", "")))?;
        if let Some(url) = &c.resource_metadata
            && (url.contains('"') || url.chars().any(char::is_control))
        {
            return bad(
                "resource_metadata must be a URL without quotes or control characters".into(),
            );
        }
        if c.algorithms.is_empty() {
            return bad("algorithms must name at least one algorithm".into());
        }
        if let Some(hs) = c
            .algorithms
            .iter()
            .find(|a| matches!(a, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512))
        {
            return bad(format!(
                "algorithms: {hs:?} is an HMAC algorithm; a resource server verifies with the issuer's public keys only"
            ));
        }
        if c.leeway > MAX_LEEWAY {
            return bad("leeway must be between 0 and 300 seconds".into());
        }
        if c.unknown_kid_refresh.is_zero() {
            return bad("unknown_kid_refresh must be positive".into());
        }
        if c.jwks_max_age < c.unknown_kid_refresh {
            return bad("jwks_max_age must be at least unknown_kid_refresh".into());
        }
        if c.fetch_timeout.is_zero() {
            return bad("fetch_timeout must be positive".into());
        }
        Ok(c)
    }
}

impl ResourceServerConfig {
    /// The configuration an `[oauth]` table of a server's TOML file holds
    /// (`issuer`, `audience`, `jwks_uri` required; `resource_metadata`;
    /// `leeway` in seconds), `text` being the table's contents. The deployable
    /// server and `stateseal proxy` read their `[oauth]` table with it.
    ///
    /// ```
    /// use stateseal_oauth::ResourceServerConfig;
    ///
    /// let config = ResourceServerConfig::from_toml(
    ///     "issuer = \"https://auth.example.com\"\naudience = \"https://mcp.example.com/mcp\"\n\
    ///      jwks_uri = \"https://auth.example.com/jwks.json\"\nleeway = 30\n",
    /// )?;
    /// assert_eq!(config.leeway(), std::time::Duration::from_secs(30));
    /// let unknown = ResourceServerConfig::from_toml("isuer = \"x\"").unwrap_err();
    /// assert_eq!(unknown.to_string(), "invalid configuration: no setting \"isuer\"");
    /// # Ok::<(), stateseal_oauth::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Config`] naming the setting that is unknown, missing or wrong.
    pub fn from_toml(text: &str) -> Result<Self, Error> {
        let bad = |m: String| Error::Config(m);
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| bad(e.message().trim().to_owned()))?;
        const KNOWN: [&str; 5] = [
            "issuer",
            "audience",
            "jwks_uri",
            "resource_metadata",
            "leeway",
        ];
        if let Some(unknown) = table.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            return Err(bad(format!("no setting {unknown:?}")));
        }
        let text = |key: &str| -> Result<Option<String>, Error> {
            match table.get(key) {
                None => Ok(None),
                Some(toml::Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(bad(format!("{key} must be a string"))),
            }
        };
        let required = |key: &str| text(key)?.ok_or_else(|| bad(format!("{key} is required")));
        let mut b = Self::builder()
            .issuer(required("issuer")?)
            .audience(required("audience")?)
            .jwks_uri(required("jwks_uri")?);
        if let Some(url) = text("resource_metadata")? {
            b = b.resource_metadata(url);
        }
        let seconds = match table.get("leeway") {
            None => None,
            Some(toml::Value::Integer(i)) => Some(*i as f64),
            Some(toml::Value::Float(f)) => Some(*f),
            Some(_) => return Err(bad("leeway must be a number of seconds".into())),
        };
        if let Some(secs) = seconds {
            // What is no duration (-1, nan) is refused in the words used for one too long.
            let leeway = Duration::try_from_secs_f64(secs)
                .map_err(|_| bad("leeway must be between 0 and 300 seconds".into()))?;
            b = b.leeway(leeway);
        }
        b.build()
    }
}
