//! What Key Vault answers: its failures classified (never quoting key
//! material), its `encrypt`/`decrypt` results decoded, and plaintext copies
//! wiped once they are ours alone.

use azure_core::error::ErrorKind;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use bytes::Bytes;
use stateseal::Error;
use stateseal::provider::{ErrorClass, kms_error, provider_failure};
use zeroize::{Zeroize, Zeroizing};

pub(crate) fn err(class: ErrorClass, detail: impl Into<String>) -> Error {
    kms_error(crate::SCHEME, class, detail)
}

/// The class of an HTTP status from Key Vault (see the crate docs for the table).
pub(crate) fn class_of_status(status: u16) -> ErrorClass {
    match status {
        // Forbidden (no role, or the key disabled) and an unknown key: the KEK is not usable.
        403 | 404 => ErrorClass::Denied,
        // The caller's token (expired, refresh failed): passes when credentials recover.
        401 => ErrorClass::Transient,
        s => ErrorClass::of_http_status(s),
    }
}

pub(crate) fn classify(op: &str, e: &azure_core::Error) -> Error {
    match e.kind() {
        ErrorKind::HttpResponse {
            status,
            error_code,
            raw_response,
        } => {
            let status = u16::from(*status);
            // Key Vault's error body: {"error":{"code","message"}}; no key material in it.
            let message = raw_response
                .as_ref()
                .and_then(|r| serde_json::from_slice::<serde_json::Value>(r.body()).ok())
                .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
                .unwrap_or_default();
            let code = error_code.as_deref().unwrap_or("");
            provider_failure(
                crate::SCHEME,
                class_of_status(status),
                op,
                &format!("HTTP {status} {code}: {message}"),
            )
        }
        ErrorKind::Credential => err(
            ErrorClass::Transient,
            format!(
                "{op}: credentials: {} (see STATESEAL_AZURE_CREDENTIALS)",
                stateseal::provider::bounded_text(&e.to_string())
            ),
        ),
        ErrorKind::Connection | ErrorKind::Io => provider_failure(
            crate::SCHEME,
            ErrorClass::Transient,
            op,
            &stateseal::provider::cause_chain(e),
        ),
        _ => provider_failure(
            crate::SCHEME,
            ErrorClass::Invalid,
            op,
            &stateseal::provider::cause_chain(e),
        ),
    }
}

/// Wipes a plaintext copy held in `Bytes` when this is its last reference; returns whether it did.
pub(crate) fn wipe(bytes: Bytes) -> bool {
    match bytes.try_into_mut() {
        Ok(mut unique) => {
            unique.as_mut().zeroize();
            true
        }
        Err(_) => false,
    }
}

/// An `encrypt`/`decrypt` answer's fields (base64url).
#[derive(serde::Deserialize)]
pub(crate) struct OperationResult {
    pub(crate) kid: Option<String>,
    pub(crate) value: Option<String>,
    pub(crate) iv: Option<String>,
    pub(crate) tag: Option<String>,
}

impl Drop for OperationResult {
    // `value` is the plaintext data key, base64url, in a decrypt answer.
    fn drop(&mut self) {
        self.value.zeroize();
    }
}

pub(crate) fn decode(
    field: Option<&str>,
    what: &str,
    op: &str,
) -> Result<Zeroizing<Vec<u8>>, Error> {
    field
        .and_then(|s| B64URL.decode(s.trim_end_matches('=')).ok())
        .map(Zeroizing::new)
        .ok_or_else(|| {
            err(
                ErrorClass::Transient,
                format!("{op}: the answer has no valid {what}; it was discarded"),
            )
        })
}

/// The version in a key id `https://<host>/keys/<name>/<version>`, when it names `name`.
pub(crate) fn version_of<'a>(kid: &'a str, name: &str) -> Option<&'a str> {
    let path = kid.strip_prefix("https://")?.split_once('/')?.1;
    let mut parts = path.split('/');
    let (Some("keys"), Some(n), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    (n == name && crate::wrapped::is_version(version)).then_some(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_classes() {
        assert_eq!(class_of_status(403), ErrorClass::Denied);
        assert_eq!(class_of_status(404), ErrorClass::Denied);
        assert_eq!(
            class_of_status(401),
            ErrorClass::Transient,
            "a token problem is not a revocation"
        );
        assert_eq!(class_of_status(429), ErrorClass::Transient);
        assert_eq!(class_of_status(503), ErrorClass::Transient);
        assert_eq!(class_of_status(400), ErrorClass::Invalid);
    }

    #[test]
    fn key_ids() {
        assert_eq!(
            version_of("https://h.managedhsm.azure.net/keys/k/abc123", "k"),
            Some("abc123")
        );
        for bad in [
            "https://h.managedhsm.azure.net/keys/other/abc123",
            "https://h.managedhsm.azure.net/keys/k",
            "https://h.managedhsm.azure.net/keys/k/abc/x",
            "https://h.managedhsm.azure.net/secrets/k/abc",
            "http://h.managedhsm.azure.net/keys/k/abc",
        ] {
            assert_eq!(version_of(bad, "k"), None, "{bad}");
        }
    }

    #[test]
    fn plaintext_copies_are_wiped_when_ours_alone() {
        assert!(wipe(Bytes::copy_from_slice(&[7; 32])));
        let shared = Bytes::copy_from_slice(&[7; 32]);
        let other = shared.clone();
        assert!(!wipe(shared));
        assert_eq!(other.as_ref(), &[7; 32]);
    }
}
