//! A local OAuth authorization server for the resource-server tests: it
//! serves its JWKS at `/jwks.json` on a free loopback port (counting fetches)
//! and mints RS256 access tokens with RSA-2048 keys it generates, rotating
//! them on demand. Also the attacker's tokens the tests refuse: unsigned
//! (`alg: none`), HMAC-signed with the published keys, under unpublished keys.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use aws_lc_rs::encoding::AsDer;
use aws_lc_rs::rsa::{KeyPair, KeySize};
use axum::extract::State;
use axum::response::IntoResponse;
use base64_simd::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

use crate::served::Served;

/// One signing key: its id, its PKCS#1 private key and its public JWK.
struct IssuerKey {
    kid: String,
    pkcs1: Vec<u8>,
    jwk: Value,
}

/// One DER element: (tag, content, the bytes after it).
fn der(input: &[u8]) -> (u8, &[u8], &[u8]) {
    let (len, at) = match input[1] {
        l if l < 0x80 => (usize::from(l), 2),
        0x81 => (usize::from(input[2]), 3),
        0x82 => (usize::from(u16::from_be_bytes([input[2], input[3]])), 4),
        other => panic!("DER length form {other:#x}"),
    };
    (input[0], &input[at..at + len], &input[at + len..])
}

fn unsigned_integer(bytes: &[u8]) -> &[u8] {
    match bytes {
        [0, rest @ ..] => rest,
        b => b,
    }
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode_to_string(bytes)
}

impl IssuerKey {
    fn generate(kid: &str) -> Self {
        let pair = KeyPair::generate(KeySize::Rsa2048).expect("RSA key");
        let pkcs8 = pair.as_der().expect("PKCS#8");
        // PKCS#8: SEQUENCE { version, algorithm, OCTET STRING { RSAPrivateKey } }.
        let (_, info, _) = der(pkcs8.as_ref());
        let (_, _, rest) = der(info);
        let (_, _, rest) = der(rest);
        let (tag, pkcs1, _) = der(rest);
        assert_eq!(tag, 0x04, "PKCS#8 private key octets");
        // RSAPrivateKey: SEQUENCE { version, n, e, … }.
        let (_, fields, _) = der(pkcs1);
        let (_, _, rest) = der(fields);
        let (_, n, rest) = der(rest);
        let (_, e, _) = der(rest);
        let jwk = json!({
            "kty": "RSA", "use": "sig", "alg": "RS256", "kid": kid,
            "n": b64(unsigned_integer(n)), "e": b64(unsigned_integer(e)),
        });
        Self {
            kid: kid.to_owned(),
            pkcs1: pkcs1.to_vec(),
            jwk,
        }
    }

    fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &EncodingKey::from_rsa_der(&self.pkcs1))
            .expect("sign")
    }
}

struct Shared {
    published: Mutex<Vec<IssuerKey>>,
    fetches: AtomicUsize,
}

/// A running issuer, stopped (and its thread joined) when dropped.
pub struct Issuer {
    /// `http://127.0.0.1:<port>`: the issuer identifier its tokens carry.
    pub url: String,
    shared: Arc<Shared>,
    unpublished: IssuerKey,
    next: AtomicUsize,
    _served: Served,
}

async fn jwks(State(shared): State<Arc<Shared>>) -> impl IntoResponse {
    shared.fetches.fetch_add(1, Ordering::SeqCst);
    let keys: Vec<Value> = match shared.published.lock() {
        Ok(k) => k.iter().map(|k| k.jwk.clone()).collect(),
        Err(_) => Vec::new(),
    };
    (
        [("content-type", "application/json")],
        json!({ "keys": keys }).to_string(),
    )
}

impl Issuer {
    /// Starts an issuer publishing one key.
    pub fn start() -> Self {
        let shared = Arc::new(Shared {
            published: Mutex::new(vec![IssuerKey::generate("key-1")]),
            fetches: AtomicUsize::new(0),
        });
        let app = axum::Router::new()
            .route("/jwks.json", axum::routing::get(jwks))
            .with_state(Arc::clone(&shared));
        let served = Served::start(app);
        Self {
            url: served.url.clone(),
            shared,
            unpublished: IssuerKey::generate("never-published"),
            next: AtomicUsize::new(2),
            _served: served,
        }
    }

    /// Where its keys are published.
    pub fn jwks_uri(&self) -> String {
        format!("{}/jwks.json", self.url)
    }

    /// The published key set, as served.
    pub fn jwks(&self) -> Value {
        let keys: Vec<Value> = self.keys().iter().map(|k| k.jwk.clone()).collect();
        json!({ "keys": keys })
    }

    fn keys(&self) -> std::sync::MutexGuard<'_, Vec<IssuerKey>> {
        self.shared.published.lock().expect("keys")
    }

    /// The key id new tokens are signed with.
    pub fn current_kid(&self) -> String {
        self.keys().last().expect("a key").kid.clone()
    }

    /// Key-set fetches served so far.
    pub fn fetches(&self) -> usize {
        self.shared.fetches.load(Ordering::SeqCst)
    }

    /// An RS256 token with `claims`, signed with the newest key.
    pub fn mint(&self, claims: &Value) -> String {
        self.keys().last().expect("a key").sign(claims)
    }

    /// An access token for `subject` (client `example-client`) naming
    /// `audience`, valid for `ttl_secs` from now: what a fleet harness's
    /// callers present.
    pub fn access_token(&self, subject: &str, audience: &str, ttl_secs: u64) -> String {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock after 1970")
            .as_secs();
        self.mint(&json!({
            "iss": self.url, "aud": audience, "sub": subject, "client_id": "example-client",
            "iat": now, "exp": now + ttl_secs,
        }))
    }

    /// A token signed with a key that was never published.
    pub fn mint_unpublished(&self, claims: &Value) -> String {
        self.unpublished.sign(claims)
    }

    /// Publishes a new key, which signs from now on; its id.
    pub fn rotate(&self) -> String {
        let kid = format!("key-{}", self.next.fetch_add(1, Ordering::SeqCst));
        self.keys().push(IssuerKey::generate(&kid));
        kid
    }

    /// Stops publishing `kid`.
    pub fn retire(&self, kid: &str) {
        self.keys().retain(|k| k.kid != kid);
    }
}

/// A token whose header and claims are given and whose signature is empty
/// (`alg: none` and other headers no issuer would sign).
pub fn unsigned_token(header: &Value, claims: &Value) -> String {
    format!(
        "{}.{}.",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    )
}

/// An HS256 token with key id `kid`, its MAC keyed with `secret` (an
/// attacker's choice: the issuer's published key set, say).
pub fn hs256_token(kid: &str, secret: &[u8], claims: &Value) -> String {
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, claims, &EncodingKey::from_secret(secret)).expect("sign")
}
