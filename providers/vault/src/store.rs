//! `vault-kv://<mount>/<path>`: the keyset document in a KV v2 secret.
//!
//! The document's fields are the secret's data, so `bao kv get` shows it.
//! Every write is a KV v2 check-and-set on the version this store just read
//! and saw at the expected generation: two writers that read the same version
//! cannot both succeed, which is what makes concurrent rotations safe.
//!
//! A read is capped before anything in it is parsed: the response (the
//! document in KV's wrapper) is read no further than the document's cap
//! ([`MAX_DOCUMENT_BYTES`]) + 1 bytes, as the file store reads a file. KV's
//! wrapper (a few hundred bytes) counts against the cap; keysets are far
//! smaller (64 entries at most).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rustify::endpoint::Endpoint;
use stateseal::keyset::{ConditionalLoad, MAX_DOCUMENT_BYTES, StoreVersion, check_next_generation};
use stateseal::provider::BoxFuture;
use stateseal::{Error, KeysetError, KeysetStore, ProviderError, StoredKeyset};
use vaultrs::api::kv2::requests::{
    ReadSecretMetadataRequest, ReadSecretRequest, SetSecretRequest, SetSecretRequestOptions,
};
use vaultrs::api::kv2::responses::ReadSecretResponse;
use vaultrs::client::{Client, VaultClient};
use vaultrs::error::ClientError;

use crate::session::{CallError, Session};

/// The KV v2 keyset store. Open it through the registry ([`crate::register`]).
#[derive(Debug, Clone)]
pub struct VaultKvStore {
    session: Arc<Session>,
    uri: String,
    mount: String,
    path: String,
    /// Set once the token turns out not to read KV metadata: conditional
    /// reads then fall back to full ones (the policy in `terraform/vault`
    /// grants `read` on `<mount>/metadata/<path>`).
    metadata_denied: Arc<AtomicBool>,
}

/// An error response's body is read this far, for Vault's message.
const MAX_ERROR_BYTES: usize = 64 << 10;

/// A response body read no further than its cap.
enum Capped {
    Within(Vec<u8>),
    /// Past the cap: at least this many bytes (the Content-Length when given).
    Over(u64),
}

/// Reads `response`'s body, at most `cap` + 1 bytes of it (none when its
/// Content-Length is already past `cap`).
async fn read_capped(mut response: reqwest::Response, cap: usize) -> Result<Capped, ClientError> {
    if let Some(length) = response.content_length().filter(|&n| n > cap as u64) {
        return Ok(Capped::Over(length));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| rustify::errors::ClientError::ResponseError { source: e.into() })?
    {
        body.extend_from_slice(&chunk);
        if body.len() > cap {
            return Ok(Capped::Over(body.len() as u64));
        }
    }
    Ok(Capped::Within(body))
}

/// Sends `endpoint` as vaultrs does (its middleware adds the version prefix,
/// token and namespace) and reads the answer's body no further than `cap`.
/// A refusal is the error vaultrs would give ([`ClientError::APIError`] with
/// Vault's messages), so callers classify it as any other call's.
async fn exec_capped(
    client: &VaultClient,
    endpoint: impl Endpoint,
    cap: usize,
) -> Result<Capped, ClientError> {
    let endpoint = endpoint.with_middleware(client.middle());
    let http = client.http();
    let request = endpoint.request(&http.base)?;
    let request = reqwest::Request::try_from(request)
        .map_err(|e| rustify::errors::ClientError::ReqwestBuildError { source: e })?;
    let (url, method) = (request.url().to_string(), request.method().to_string());
    let response = http.http.execute(request).await.map_err(|e| {
        rustify::errors::ClientError::RequestError {
            source: e.into(),
            url,
            method,
        }
    })?;
    let code = response.status().as_u16();
    if rustify::client::HTTP_SUCCESS_CODES.contains(&code) {
        return read_capped(response, cap).await;
    }
    #[derive(serde::Deserialize)]
    struct Refusal {
        errors: Vec<String>,
    }
    let content = match read_capped(response, MAX_ERROR_BYTES).await? {
        Capped::Within(body) => body,
        Capped::Over(_) => Vec::new(),
    };
    Err(match serde_json::from_slice::<Refusal>(&content) {
        Ok(Refusal { errors }) => ClientError::APIError { code, errors },
        Err(_) => rustify::errors::ClientError::ServerResponseError {
            code,
            content: String::from_utf8(content).ok(),
        }
        .into(),
    })
}

/// The refusal of a document past the cap, as [`StoredKeyset::from_bytes`] words it.
fn oversized(bytes: u64) -> Error {
    Error::Keyset(KeysetError::Invalid {
        field: "document".into(),
        problem: format!(
            "{bytes} bytes, more than the {MAX_DOCUMENT_BYTES} a keyset document may have"
        ),
    })
}

/// What one read of the secret found.
struct KvRead {
    /// The document (`None`: no secret, or its current version deleted).
    doc: Option<StoredKeyset>,
    /// The KV version number, what a check-and-set names (0: no secret yet).
    number: u64,
    /// The version as conditional reads name it ([`kv_version`]).
    version: Option<StoreVersion>,
}

/// A KV version as this store names it: the number, and whether that
/// version is deleted or destroyed (a soft delete keeps the number).
fn kv_version(version: u64, deletion_time: &str, destroyed: bool) -> StoreVersion {
    StoreVersion::new(format!("{version}:{deletion_time}:{destroyed}"))
}

/// Splits `vault-kv://<mount>/<path>` into the mount (first segment) and the path.
fn parse(uri: &str) -> Result<(String, String), Error> {
    let bad = || {
        Error::Provider(ProviderError::InvalidUri {
            uri: uri.to_owned(),
            problem: "expected vault-kv://<kv v2 mount>/<secret path>".into(),
        })
    };
    let rest = uri.strip_prefix("vault-kv://").ok_or_else(bad)?;
    let (mount, path) = rest.split_once('/').ok_or_else(bad)?;
    let seg_ok = |s: &str| {
        !s.is_empty()
            && s != "."
            && s != ".."
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    };
    if !seg_ok(mount) || !path.split('/').all(seg_ok) {
        return Err(bad());
    }
    Ok((mount.to_owned(), path.to_owned()))
}

impl VaultKvStore {
    pub(crate) fn open(session: Arc<Session>, uri: &str) -> Result<Self, Error> {
        let (mount, path) = parse(uri)?;
        Ok(Self {
            session,
            uri: uri.to_owned(),
            mount,
            path,
            metadata_denied: Arc::new(AtomicBool::new(false)),
        })
    }

    /// The version of the secret now, from its metadata (a small read that
    /// leaves the data where it is); `None` when the token may not read it.
    async fn current_version(&self) -> Result<Option<StoreVersion>, Error> {
        if self.metadata_denied.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let result = self
            .session
            .call(crate::SCHEME, "kv metadata read", |client| async move {
                let endpoint = ReadSecretMetadataRequest::builder()
                    .mount(self.mount.as_str())
                    .path(self.path.as_str())
                    .build()
                    .map_err(|_| ClientError::InvalidLoginMethodError)?;
                vaultrs::api::exec_with_result(&*client, endpoint).await
            })
            .await;
        match result {
            Ok(meta) => {
                let current = meta.versions.get(&meta.current_version.to_string());
                Ok(Some(kv_version(
                    meta.current_version,
                    current.map_or("", |v| v.deletion_time.as_str()),
                    current.is_some_and(|v| v.destroyed),
                )))
            }
            // No secret yet: a full read says so.
            Err(CallError::Vault(ClientError::APIError { code: 404, .. })) => Ok(None),
            Err(CallError::Vault(ClientError::APIError { code: 403, .. })) => {
                self.metadata_denied.store(true, Ordering::Relaxed);
                tracing::warn!(store = %self.uri, "this token may not read the keyset's KV metadata; every refresh reads the whole secret (grant read on <mount>/metadata/<path>)");
                Ok(None)
            }
            Err(e) => Err(self.vault_error("kv metadata read", e)),
        }
    }

    async fn read_if_changed(&self, seen: Option<&StoreVersion>) -> Result<ConditionalLoad, Error> {
        if let Some(seen) = seen
            && self.current_version().await?.as_ref() == Some(seen)
        {
            return Ok(ConditionalLoad::Unchanged);
        }
        let read = self.read().await?;
        Ok(ConditionalLoad::Current {
            document: read.doc,
            version: read.version,
        })
    }

    fn store_error(&self, problem: impl Into<String>) -> Error {
        Error::Provider(ProviderError::Store {
            uri: self.uri.clone(),
            problem: problem.into(),
        })
    }

    fn vault_error(&self, what: &str, e: CallError) -> Error {
        match e.into_error(crate::STORE_SCHEME, what) {
            Error::Provider(ProviderError::Kms { class, detail, .. }) => {
                self.store_error(format!("{detail} ({class})"))
            }
            other => other,
        }
    }

    /// The secret as it is now (see [`KvRead`]): the response's size capped
    /// first, then parsed.
    async fn read(&self) -> Result<KvRead, Error> {
        let result = self
            .session
            .call(crate::SCHEME, "kv read", |client| async move {
                let endpoint = ReadSecretRequest::builder()
                    .mount(self.mount.as_str())
                    .path(self.path.as_str())
                    .build()
                    .map_err(|_| ClientError::InvalidLoginMethodError)?;
                exec_capped(&client, endpoint, MAX_DOCUMENT_BYTES).await
            })
            .await;
        let body = match result {
            Ok(Capped::Within(body)) => body,
            Ok(Capped::Over(bytes)) => return Err(oversized(bytes)),
            // An empty 404 is "no secret here"; a 404 with a message is a missing mount.
            Err(CallError::Vault(ClientError::APIError { code: 404, errors }))
                if errors.is_empty() =>
            {
                return Ok(KvRead {
                    doc: None,
                    number: 0,
                    version: None,
                });
            }
            Err(e) => return Err(self.vault_error("kv read", e)),
        };
        // serde's messages may quote the response: name the problem only.
        let resp =
            serde_json::from_slice::<vaultrs::api::EndpointResult<ReadSecretResponse>>(&body)
                .ok()
                .and_then(|r| r.data)
                .ok_or_else(|| {
                    self.store_error("kv read: the response is not a readable KV v2 secret")
                })?;
        let m = &resp.metadata;
        let mut read = KvRead {
            doc: None,
            number: m.version,
            version: Some(kv_version(m.version, &m.deletion_time, m.destroyed)),
        };
        if resp.data.is_null() || m.destroyed || !m.deletion_time.is_empty() {
            return Ok(read);
        }
        let bytes = serde_json::to_vec(&resp.data)
            .map_err(|e| self.store_error(format!("secret data: {e}")))?;
        // KV holds the envelope as JSON fields; the tag covers the payload's
        // bytes, which travel inside it as base64, so a re-serialised envelope
        // verifies the same.
        read.doc = Some(StoredKeyset::from_bytes(&bytes)?);
        Ok(read)
    }

    async fn cas(&self, expected: Option<u64>, doc: &StoredKeyset) -> Result<(), Error> {
        check_next_generation(&self.uri, expected, doc)?;
        let current = self.read().await?;
        let found = current.doc.map(|d| d.generation());
        if found != expected {
            return Err(Error::Keyset(KeysetError::Conflict { expected, found }));
        }
        let cas = u32::try_from(current.number)
            .map_err(|_| self.store_error("KV version beyond the check-and-set range"))?;
        let data: serde_json::Value = serde_json::from_slice(doc.bytes())
            .map_err(|e| self.store_error(format!("document: {e}")))?;
        let result = self
            .session
            .call(crate::SCHEME, "kv write", |client| {
                let data = data.clone();
                async move {
                    let endpoint = SetSecretRequest::builder()
                        .mount(self.mount.as_str())
                        .path(self.path.as_str())
                        .data(data)
                        .options(SetSecretRequestOptions { cas })
                        .build()
                        .map_err(|_| ClientError::InvalidLoginMethodError)?;
                    vaultrs::api::exec_with_result(&*client, endpoint).await
                }
            })
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(CallError::Vault(ClientError::APIError { code: 400, errors }))
                if errors.iter().any(|e| e.contains("check-and-set")) =>
            {
                // Another writer got there between our read and our write.
                let found = self
                    .read()
                    .await
                    .ok()
                    .and_then(|r| r.doc)
                    .map(|d| d.generation());
                Err(Error::Keyset(KeysetError::Conflict { expected, found }))
            }
            Err(e) => Err(self.vault_error("kv write", e)),
        }
    }
}

impl KeysetStore for VaultKvStore {
    fn uri(&self) -> &str {
        &self.uri
    }

    fn load(&self) -> BoxFuture<'_, Result<Option<StoredKeyset>, Error>> {
        Box::pin(async move { self.read().await.map(|r| r.doc) })
    }

    fn load_if_changed<'a>(
        &'a self,
        seen: Option<&'a StoreVersion>,
    ) -> BoxFuture<'a, Result<ConditionalLoad, Error>> {
        Box::pin(self.read_if_changed(seen))
    }

    fn compare_and_swap<'a>(
        &'a self,
        expected: Option<u64>,
        doc: &'a StoredKeyset,
    ) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(self.cas(expected, doc))
    }

    fn newest_copy(&self) -> Option<Box<dyn KeysetStore>> {
        let suffix = stateseal::keyset::NEWEST_COPY_SUFFIX;
        Some(Box::new(Self {
            session: Arc::clone(&self.session),
            uri: format!("{}{suffix}", self.uri),
            mount: self.mount.clone(),
            path: format!("{}{suffix}", self.path),
            metadata_denied: Arc::clone(&self.metadata_denied),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_uris() {
        assert_eq!(
            parse("vault-kv://secret/stateseal/keyset").unwrap(),
            ("secret".to_owned(), "stateseal/keyset".to_owned())
        );
        for bad in [
            "vault-kv://secret",
            "vault-kv://secret/",
            "vault-kv://secret/a//b",
            "vault-kv://secret/../x",
            "vault-kv:///x",
            "kv://secret/x",
        ] {
            assert!(
                matches!(
                    parse(bad),
                    Err(Error::Provider(ProviderError::InvalidUri { .. }))
                ),
                "{bad}"
            );
        }
    }
}
