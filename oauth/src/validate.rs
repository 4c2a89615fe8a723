//! Checking one access token, in the order the crate documentation lists.

use std::collections::HashSet;
use std::sync::Arc;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Validation, decode, decode_header};
use serde::Deserialize;
use stateseal::boundary::AuthenticatedPrincipal;
use stateseal::{Clock, SystemClock, UnixTime};

use crate::Error;
use crate::config::ResourceServerConfig;
use crate::jwks::{Jwks, MAX_KID_LEN};

/// The longest token examined.
const MAX_TOKEN_LEN: usize = 8 * 1024;

/// The claims read from a verified token.
#[derive(Deserialize)]
struct Claims {
    exp: Option<f64>,
    nbf: Option<f64>,
    iss: Option<String>,
    sub: Option<String>,
    client_id: Option<String>,
    azp: Option<String>,
}

/// Validates access tokens for one resource against one issuer.
///
/// `Send + Sync`; share it behind an `Arc` (the axum layer takes one).
pub struct ResourceServer {
    config: ResourceServerConfig,
    jwks: Jwks,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for ResourceServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceServer")
            .field("issuer", &self.config.issuer)
            .field("audience", &self.config.audience)
            .finish_non_exhaustive()
    }
}

fn refused(kind: &ErrorKind) -> Error {
    Error::InvalidToken(match kind {
        ErrorKind::InvalidSignature => "signature does not verify",
        ErrorKind::InvalidIssuer => "wrong issuer",
        ErrorKind::InvalidAudience => "wrong audience",
        ErrorKind::MissingRequiredClaim(_) => "a required claim is missing",
        ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName => {
            "algorithm does not match the key"
        }
        _ => "malformed",
    })
}

impl ResourceServer {
    /// A resource server on the system clock.
    ///
    /// # Errors
    /// [`Error::Config`] if the HTTP client for the key set cannot be built.
    pub fn new(config: ResourceServerConfig) -> Result<Self, Error> {
        Self::with_clock(config, Arc::new(SystemClock))
    }

    /// A resource server on `clock` (tests move time without sleeping).
    ///
    /// # Errors
    /// [`Error::Config`] if the HTTP client for the key set cannot be built.
    pub fn with_clock(config: ResourceServerConfig, clock: Arc<dyn Clock>) -> Result<Self, Error> {
        Ok(Self {
            jwks: Jwks::new(&config)?,
            config,
            clock,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ResourceServerConfig {
        &self.config
    }

    /// Key-set fetches attempted so far.
    pub fn key_set_fetches(&self) -> u64 {
        self.jwks.fetches()
    }

    /// The caller `token` names, if every check passes, at the clock's time.
    ///
    /// # Errors
    /// [`Error::InvalidToken`] naming the failed check,
    /// [`Error::KeysUnavailable`] when no key set was ever fetched.
    pub async fn authenticate(&self, token: &str) -> Result<AuthenticatedPrincipal, Error> {
        self.authenticate_at(token, self.clock.now()).await
    }

    /// [`authenticate`](Self::authenticate) at `now`.
    ///
    /// # Errors
    /// As [`authenticate`](Self::authenticate).
    pub async fn authenticate_at(
        &self,
        token: &str,
        now: UnixTime,
    ) -> Result<AuthenticatedPrincipal, Error> {
        let now = now.as_secs_f64();
        if token.len() > MAX_TOKEN_LEN || token.split('.').count() != 3 {
            return Err(Error::InvalidToken("malformed"));
        }
        // `alg: none` and unknown algorithms fail here: the crate has no such variant.
        let header = decode_header(token).map_err(|_| Error::InvalidToken("malformed"))?;
        if !self.config.algorithms.contains(&header.alg) {
            return Err(Error::InvalidToken("algorithm not accepted"));
        }
        let kid = header
            .kid
            .as_deref()
            .filter(|k| !k.is_empty() && k.len() <= MAX_KID_LEN)
            .ok_or(Error::InvalidToken("no key id"))?;
        let key = self.jwks.key(kid, now).await?;
        if key.alg.is_some_and(|a| a != header.alg) {
            return Err(Error::InvalidToken("algorithm does not match the key"));
        }
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.config.issuer]);
        validation.set_audience(&[&self.config.audience]);
        // Times are checked below, on this server's clock.
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.required_spec_claims =
            HashSet::from(["exp", "iss", "aud", "sub"].map(String::from));
        let claims = decode::<Claims>(token, &key.key, &validation)
            .map_err(|e| refused(e.kind()))?
            .claims;
        let leeway = self.config.leeway.as_secs_f64();
        let missing = Error::InvalidToken("a required claim is missing");
        let (Some(exp), Some(iss), Some(sub)) = (claims.exp, claims.iss, claims.sub) else {
            return Err(missing);
        };
        if sub.is_empty() {
            return Err(missing);
        }
        if !exp.is_finite() || exp + leeway <= now {
            return Err(Error::InvalidToken("expired"));
        }
        if claims
            .nbf
            .is_some_and(|nbf| !nbf.is_finite() || nbf - leeway > now)
        {
            return Err(Error::InvalidToken("not yet valid"));
        }
        let client_id = claims
            .client_id
            .or(claims.azp)
            .filter(|c| !c.is_empty())
            .ok_or(Error::InvalidToken("no client_id"))?;
        Ok(AuthenticatedPrincipal {
            client_id,
            issuer: Some(iss),
            subject: Some(sub),
        })
    }
}
