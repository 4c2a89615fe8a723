//! The issuer's key set: fetched over https (or loopback http), no redirects,
//! at most 256 KiB; used for `jwks_max_age`; fetched again early for a key
//! id it does not hold, at most once per `unknown_kid_refresh` (anyone can
//! send a token with a made-up key id). When a fetch fails, the keys already
//! held stay in use: an issuer outage must not lock every caller out.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use jsonwebtoken::jwk::{JwkSet, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};

use crate::Error;
use crate::config::ResourceServerConfig;

/// The largest key set read.
const MAX_JWKS_BYTES: usize = 256 * 1024;
/// The longest key id looked up.
pub(crate) const MAX_KID_LEN: usize = 256;

/// One verification key and the algorithm its JWK names, if any.
pub(crate) struct Key {
    pub(crate) key: DecodingKey,
    pub(crate) alg: Option<Algorithm>,
}

/// The keys of one fetch.
#[derive(Default)]
struct Fetched {
    keys: HashMap<String, Arc<Key>>,
    at: Option<f64>,
}

/// When a fetch was last made for an unknown key id, and when one last failed.
#[derive(Default)]
struct Attempts {
    last_unknown: Option<f64>,
    last_failure: Option<f64>,
}

pub(crate) struct Jwks {
    uri: String,
    client: reqwest::Client,
    max_age: f64,
    unknown_kid_refresh: f64,
    current: RwLock<Arc<Fetched>>,
    attempts: tokio::sync::Mutex<Attempts>,
    fetches: AtomicU64,
}

fn algorithm_of(alg: KeyAlgorithm) -> Option<Algorithm> {
    Some(match alg {
        KeyAlgorithm::RS256 => Algorithm::RS256,
        KeyAlgorithm::RS384 => Algorithm::RS384,
        KeyAlgorithm::RS512 => Algorithm::RS512,
        KeyAlgorithm::PS256 => Algorithm::PS256,
        KeyAlgorithm::PS384 => Algorithm::PS384,
        KeyAlgorithm::PS512 => Algorithm::PS512,
        KeyAlgorithm::ES256 => Algorithm::ES256,
        KeyAlgorithm::ES384 => Algorithm::ES384,
        KeyAlgorithm::EdDSA => Algorithm::EdDSA,
        _ => return None,
    })
}

/// The signing keys of a JWKS document, by key id. Keys without an id, for
/// encryption, of an unknown algorithm or that do not parse are left out.
fn parse(body: &[u8]) -> Result<HashMap<String, Arc<Key>>, String> {
    let set: JwkSet = serde_json::from_slice(body).map_err(|e| format!("not a JWKS: {e}"))?;
    let mut keys = HashMap::new();
    for jwk in &set.keys {
        let Some(kid) = jwk.common.key_id.clone() else {
            continue;
        };
        if matches!(jwk.common.public_key_use, Some(ref u) if *u != PublicKeyUse::Signature) {
            continue;
        }
        let alg = match jwk.common.key_algorithm {
            Some(a) => match algorithm_of(a) {
                Some(alg) => Some(alg),
                None => continue,
            },
            None => None,
        };
        if let Ok(key) = DecodingKey::from_jwk(jwk) {
            keys.insert(kid, Arc::new(Key { key, alg }));
        }
    }
    Ok(keys)
}

impl Jwks {
    pub(crate) fn new(config: &ResourceServerConfig) -> Result<Self, Error> {
        let client = reqwest::Client::builder()
            .timeout(config.fetch_timeout)
            // A redirect could lead anywhere, plain http included.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| Error::Config(format!("jwks_uri: cannot build an HTTP client: {e}")))?;
        Ok(Self {
            uri: config.jwks_uri.clone(),
            client,
            max_age: config.jwks_max_age.as_secs_f64(),
            unknown_kid_refresh: config.unknown_kid_refresh.as_secs_f64(),
            current: RwLock::new(Arc::default()),
            attempts: tokio::sync::Mutex::default(),
            fetches: AtomicU64::new(0),
        })
    }

    /// Fetches attempted so far.
    pub(crate) fn fetches(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    fn held(&self) -> Arc<Fetched> {
        match self.current.read() {
            Ok(c) => Arc::clone(&c),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    fn fresh(&self, f: &Fetched, now: f64) -> bool {
        f.at.is_some_and(|at| now - at < self.max_age)
    }

    /// The key with id `kid` at `now`, fetching the set when it is stale or
    /// (rate-limited) when it lacks `kid`.
    pub(crate) async fn key(&self, kid: &str, now: f64) -> Result<Arc<Key>, Error> {
        let held = self.held();
        if self.fresh(&held, now)
            && let Some(k) = held.keys.get(kid)
        {
            return Ok(Arc::clone(k));
        }
        // One fetch at a time; whoever waited looks again first.
        let mut attempts = self.attempts.lock().await;
        let held = self.held();
        if self.fresh(&held, now)
            && let Some(k) = held.keys.get(kid)
        {
            return Ok(Arc::clone(k));
        }
        // A stale set is fetched again; a fresh one that lacks the key id at
        // most once per `unknown_kid_refresh` (anyone can send such a token);
        // after a failed fetch, nothing for that long either.
        let recent = |t: Option<f64>| t.is_some_and(|t| now - t < self.unknown_kid_refresh);
        let stale = !self.fresh(&held, now);
        let may_fetch = !recent(attempts.last_failure) && (stale || !recent(attempts.last_unknown));
        if may_fetch {
            if !stale {
                attempts.last_unknown = Some(now);
            }
            self.fetches.fetch_add(1, Ordering::Relaxed);
            match self.fetch().await {
                Ok(keys) => {
                    let next = Arc::new(Fetched {
                        keys,
                        at: Some(now),
                    });
                    match self.current.write() {
                        Ok(mut c) => *c = next,
                        Err(poisoned) => *poisoned.into_inner() = next,
                    }
                }
                Err(e) => {
                    attempts.last_failure = Some(now);
                    if held.at.is_none() {
                        return Err(Error::KeysUnavailable(e));
                    }
                    tracing::warn!(jwks_uri = %self.uri, error = %e, "could not fetch the issuer's keys; the keys already held stay in use");
                }
            }
        } else if held.at.is_none() {
            return Err(Error::KeysUnavailable(
                "the last fetch failed; the next is not due yet".into(),
            ));
        }
        self.held()
            .keys
            .get(kid)
            .cloned()
            .ok_or(Error::InvalidToken("unknown key id"))
    }

    async fn fetch(&self) -> Result<HashMap<String, Arc<Key>>, String> {
        let mut response = self
            .client
            .get(&self.uri)
            .header("accept", "application/json")
            .send()
            .await
            .map_err(|e| stateseal::provider::cause_chain(&e))?;
        if !response.status().is_success() {
            return Err(format!("HTTP {}", response.status().as_u16()));
        }
        if response
            .content_length()
            .is_some_and(|n| n > MAX_JWKS_BYTES as u64)
        {
            return Err(format!("larger than {MAX_JWKS_BYTES} bytes"));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| stateseal::provider::cause_chain(&e))?
        {
            if body.len() + chunk.len() > MAX_JWKS_BYTES {
                return Err(format!("larger than {MAX_JWKS_BYTES} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        parse(&body)
    }
}
