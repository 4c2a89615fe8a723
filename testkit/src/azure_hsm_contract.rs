//! A **contract test double** of Azure Key Vault Managed HSM's REST key
//! operations (Microsoft ships no Key Vault or Managed HSM emulator). It
//! implements what the documentation fixes and stateseal relies on, over TLS
//! on loopback because the Azure SDK sends bearer tokens over TLS only:
//!
//! - the authentication challenge: a request without `Authorization` gets
//!   `401` and `WWW-Authenticate: Bearer authorization="…", resource="https://managedhsm.azure.net"`;
//!   the SDK fetches a token for that resource and sends the request again;
//! - `GET /keys/{name}[/{version}]`: `{"key":{"kid","kty","key_ops"},"attributes":{"enabled"}}`;
//! - `POST /keys/{name}[/{version}]/encrypt` with `{"alg","value","aad"}`:
//!   for `A256GCM` the HSM makes the 12-byte IV (a caller's `iv` is refused),
//!   and answers `{"kid","value","iv","tag"}` (base64url), `kid` naming the version used;
//! - `POST /keys/{name}/{version}/decrypt` with `{"alg","value","iv","tag","aad"}`:
//!   `{"kid","value"}`; a tag or associated data that does not authenticate is
//!   `400 BadParameter`;
//! - errors as `{"error":{"code","message"}}`: `404 KeyNotFound`, `403 Forbidden`
//!   (no role, or the key disabled), `400 BadParameter` (an algorithm the
//!   key's type cannot do, such as A256GCM on an RSA key), `401`, `503`.
//!
//! Faults are switched from the test: deny, unauthenticated, unavailable, a
//! disabled key, an answer naming another key.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use base64_simd::URL_SAFE_NO_PAD as B64URL;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use serde_json::{Value, json};

use crate::served::Served;
use crate::tls::LoopbackCert;

/// Faults a test switches on and off.
#[derive(Debug, Default)]
pub struct Faults {
    /// Answer 403 Forbidden, as to an identity without the role.
    pub deny: AtomicBool,
    /// Answer 401 to every token, as to an expired or refused one.
    pub unauthenticated: AtomicBool,
    /// Answer 503.
    pub unavailable: AtomicBool,
    /// Answer the next N encrypts with another key's id.
    pub wrong_kid: AtomicU32,
}

enum Material {
    Aes([u8; 32]),
    Rsa,
}

struct Key {
    /// (version id, material), oldest first; the last is current.
    versions: Vec<(String, Material)>,
    enabled: bool,
}

#[derive(Clone)]
struct Shared {
    keys: Arc<Mutex<HashMap<String, Key>>>,
    faults: Arc<Faults>,
    requests: Arc<AtomicU32>,
    host: String,
}

/// A running double on a loopback port (TLS, self-signed); stopped on drop.
pub struct AzureHsmContract {
    /// `https://127.0.0.1:<port>`, for `STATESEAL_AZURE_KV_ENDPOINT`.
    pub endpoint: String,
    /// The double's certificate (PEM), for `STATESEAL_AZURE_KV_CA_FILE`.
    pub ca_pem: String,
    /// The fault switches.
    pub faults: Arc<Faults>,
    shared: Shared,
    _served: Served,
}

/// The HSM host the double answers for (key ids name it, as the service's do).
pub const HSM_HOST: &str = "stateseal-test.managedhsm.azure.net";

fn error(status: u16, code: &str, message: &str) -> Response {
    let http = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        http,
        [("content-type", "application/json; charset=utf-8")],
        json!({"error": {"code": code, "message": message}}).to_string(),
    )
        .into_response()
}

fn challenge() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(
            "www-authenticate",
            r#"Bearer authorization="https://login.microsoftonline.com/00000000-0000-0000-0000-000000000000", resource="https://managedhsm.azure.net""#,
        )],
        "",
    )
        .into_response()
}

fn ok(v: &Value) -> Response {
    (
        StatusCode::OK,
        [("content-type", "application/json; charset=utf-8")],
        v.to_string(),
    )
        .into_response()
}

fn field(body: &Value, name: &str) -> Result<Option<Vec<u8>>, Box<Response>> {
    match body.get(name).and_then(Value::as_str) {
        None => Ok(None),
        Some(s) => B64URL
            .decode_to_vec(s.trim_end_matches('='))
            .map(Some)
            .map_err(|_| {
                Box::new(error(
                    400,
                    "BadParameter",
                    &format!("Property '{name}' is not valid base64url"),
                ))
            }),
    }
}

fn random_hex(n: usize) -> String {
    let mut b = vec![0u8; n];
    getrandom::fill(&mut b).expect("rng");
    b.iter().map(|x| format!("{x:02x}")).collect()
}

async fn handle(
    State(s): State<Shared>,
    method: Method,
    headers: HeaderMap,
    Path(path): Path<String>,
    body: String,
) -> Response {
    s.requests.fetch_add(1, Ordering::SeqCst);
    let Some(token) = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .filter(|t| !t.is_empty())
    else {
        return challenge();
    };
    let _ = token;
    if s.faults.unauthenticated.load(Ordering::SeqCst) {
        return challenge();
    }
    if s.faults.unavailable.load(Ordering::SeqCst) {
        return error(503, "ServiceUnavailable", "The service is unavailable.");
    }
    if s.faults.deny.load(Ordering::SeqCst) {
        return error(
            403,
            "Forbidden",
            "Caller is not authorized to perform action on resource.",
        );
    }
    // The SDK writes `/keys/{name}//encrypt` when no version is named.
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let (name, version, op) = match (method.clone(), parts.as_slice()) {
        (Method::GET, [name]) => (*name, None, "get"),
        (Method::GET, [name, version]) => (*name, Some(*version), "get"),
        (Method::POST, [name, op @ ("encrypt" | "decrypt")]) => (*name, None, *op),
        (Method::POST, [name, version, op @ ("encrypt" | "decrypt")]) => {
            (*name, Some(*version), *op)
        }
        _ => return error(404, "NotFound", "No such operation."),
    };
    let keys = s.keys.lock().expect("keys");
    let Some(key) = keys.get(name) else {
        return error(
            404,
            "KeyNotFound",
            &format!("A key with (name/id) {name} was not found in this key vault."),
        );
    };
    let Some((version, material)) = (match version {
        None => key.versions.last(),
        Some(v) => key.versions.iter().find(|(id, _)| id == v),
    }) else {
        return error(404, "KeyNotFound", "The key version was not found.");
    };
    let kid = |n: &str| format!("https://{}/keys/{n}/{version}", s.host);
    if op == "get" {
        let kty = match material {
            Material::Aes(_) => "oct-HSM",
            Material::Rsa => "RSA-HSM",
        };
        return ok(&json!({
            "key": {"kid": kid(name), "kty": kty, "key_ops": ["encrypt", "decrypt"]},
            "attributes": {"enabled": key.enabled},
        }));
    }
    if !key.enabled {
        return error(
            403,
            "Forbidden",
            &format!("Operation {op} is not allowed on a disabled key."),
        );
    }
    let Ok(req) = serde_json::from_str::<Value>(&body) else {
        return error(400, "BadParameter", "The request body is not valid JSON.");
    };
    let Material::Aes(k) = material else {
        return error(
            400,
            "BadParameter",
            "Algorithm A256GCM is not supported for key type RSA-HSM.",
        );
    };
    if req.get("alg").and_then(Value::as_str) != Some("A256GCM") {
        return error(
            400,
            "BadParameter",
            "Only A256GCM is supported by this key.",
        );
    }
    let parsed = (|| {
        Ok::<_, Box<Response>>((
            field(&req, "value")?,
            field(&req, "aad")?,
            field(&req, "iv")?,
            field(&req, "tag")?,
        ))
    })();
    let (value, aad, iv, tag) = match parsed {
        Ok(p) => p,
        Err(r) => return *r,
    };
    let Some(mut value) = value else {
        return error(400, "BadParameter", "Property 'value' is required.");
    };
    let aead = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, k).expect("key"));
    let aad = aad.unwrap_or_default();
    if op == "encrypt" {
        if iv.is_some() {
            return error(
                400,
                "BadParameter",
                "The IV is generated by the HSM for AES-GCM encryption.",
            );
        }
        let mut nonce = [0u8; 12];
        getrandom::fill(&mut nonce).expect("rng");
        let tag = aead
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(&aad),
                &mut value,
            )
            .expect("seal");
        let named = if s.faults.wrong_kid.load(Ordering::SeqCst) > 0 {
            s.faults.wrong_kid.fetch_sub(1, Ordering::SeqCst);
            kid("another-key")
        } else {
            kid(name)
        };
        return ok(&json!({
            "kid": named,
            "value": B64URL.encode_to_string(&value),
            "iv": B64URL.encode_to_string(nonce),
            "tag": B64URL.encode_to_string(tag.as_ref()),
        }));
    }
    let (Some(iv), Some(tag)) = (iv, tag) else {
        return error(
            400,
            "BadParameter",
            "A256GCM decryption needs 'iv' and 'tag'.",
        );
    };
    let Ok(nonce) = Nonce::try_assume_unique_for_key(&iv) else {
        return error(400, "BadParameter", "The IV must be 12 bytes.");
    };
    value.extend_from_slice(&tag);
    match aead.open_in_place(nonce, Aad::from(&aad), &mut value) {
        Ok(plain) => ok(&json!({"kid": kid(name), "value": B64URL.encode_to_string(plain)})),
        Err(_) => error(
            400,
            "BadParameter",
            "Decryption failed: the tag does not authenticate.",
        ),
    }
}

impl AzureHsmContract {
    /// Starts the double on a free loopback port (TLS, a certificate made for this run).
    pub fn start() -> Self {
        let cert = LoopbackCert::generate();
        let shared = Shared {
            keys: Arc::default(),
            faults: Arc::default(),
            requests: Arc::default(),
            host: HSM_HOST.to_owned(),
        };
        let app = axum::Router::new()
            .route("/keys/{*path}", axum::routing::any(handle))
            .with_state(shared.clone());
        let served = Served::start_tls(app, cert.acceptor);
        Self {
            endpoint: served.url.clone(),
            ca_pem: cert.pem,
            faults: shared.faults.clone(),
            shared,
            _served: served,
        }
    }

    fn add(&self, name: &str, material: Material) -> String {
        let version = random_hex(16);
        let mut keys = self.shared.keys.lock().expect("keys");
        let key = keys.entry(name.to_owned()).or_insert_with(|| Key {
            versions: Vec::new(),
            enabled: true,
        });
        key.versions.push((version.clone(), material));
        version
    }

    /// Creates an AES-256 key (`oct-HSM`), or a new current version of it; the version id.
    pub fn create_aes_key(&self, name: &str) -> String {
        let mut k = [0u8; 32];
        getrandom::fill(&mut k).expect("rng");
        self.add(name, Material::Aes(k))
    }

    /// Creates an `RSA-HSM` key (refused by stateseal for keysets).
    pub fn create_rsa_key(&self, name: &str) -> String {
        self.add(name, Material::Rsa)
    }

    /// Enables or disables a key (every version).
    pub fn set_enabled(&self, name: &str, enabled: bool) {
        if let Some(k) = self.shared.keys.lock().expect("keys").get_mut(name) {
            k.enabled = enabled;
        }
    }

    /// `azure-kv://` URI of a key, as users write it.
    pub fn kek(&self, name: &str) -> String {
        format!("azure-kv://{HSM_HOST}/keys/{name}")
    }

    /// Requests served so far (challenges included).
    pub fn requests(&self) -> u32 {
        self.shared.requests.load(Ordering::SeqCst)
    }
}
