//! The document as a store holds it: exact bytes, not yet trusted.
//!
//! ```json
//! { "format": "stateseal.keyset/v2", "id": "ks_…", "generation": 7,
//!   "payload": "<base64 of the payload's exact bytes>",
//!   "mac": { "kek": "<KEK URI>", "wrapped": "<base64>", "tag": "<base64>" } }
//! ```
//!
//! `id` and `generation` are copies in the clear, so that stores can
//! compare-and-swap and readers can check pins without touching the payload;
//! after the tag verifies, both must equal the payload's own. Nothing else is
//! read from the payload before its tag verifies.

use serde::{Deserialize, Serialize};

use super::document::{KEYSET_FORMAT, Keyset, b64_decode};
use super::mac::{MacKey, TAG_LEN};
use crate::clock::UnixTime;
use crate::error::{Error, KeysetError};

/// The authenticated document's format tag.
pub const KEYSET_FORMAT_V2: &str = "stateseal.keyset/v2";

/// Most bytes a stored document may have; a larger one is refused unread.
pub const MAX_DOCUMENT_BYTES: usize = 1 << 20;

/// Where a document's MAC key lives: wrapped under a KEK, bound to the keyset
/// id and the purpose `keyset-mac`.
#[derive(Clone, PartialEq, Eq)]
pub struct MacKeyRef {
    /// The KEK URI the MAC key is wrapped under.
    pub kek: String,
    /// The wrapped MAC key, as the KMS returned it.
    pub wrapped: Vec<u8>,
}

impl std::fmt::Debug for MacKeyRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MacKeyRef")
            .field("kek", &self.kek)
            .finish_non_exhaustive()
    }
}

/// A keyset document as a store returned it (or will write it): its exact
/// bytes and the fields a store and the pin check need. Use it only through
/// `rotation::KeysetTrust`, which verifies it before anything it says is used.
///
/// Two are equal when they say the same: the same clear fields and, for a v2
/// document, the same payload bytes and MAC; the envelope's own spelling may
/// differ (a KV store re-serialises it), which the tag does not cover and
/// nothing reads.
#[derive(Clone)]
pub struct StoredKeyset {
    bytes: Vec<u8>,
    id: String,
    generation: u64,
    form: Form,
}

impl PartialEq for StoredKeyset {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && self.generation == other.generation && self.form == other.form
    }
}

#[derive(Clone, PartialEq)]
enum Form {
    Authenticated {
        payload: Vec<u8>,
        mac: MacKeyRef,
        tag: [u8; TAG_LEN],
    },
    Unauthenticated(Keyset),
}

impl std::fmt::Debug for StoredKeyset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredKeyset")
            .field("id", &self.id)
            .field("generation", &self.generation)
            .field("authenticated", &self.is_authenticated())
            .field("len", &self.bytes.len())
            .finish()
    }
}

#[derive(Deserialize)]
struct FormatOnly {
    format: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEnvelope {
    format: String,
    id: String,
    generation: u64,
    payload: String,
    mac: RawMac,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMac {
    kek: String,
    wrapped: String,
    tag: String,
}

fn bad(field: &str, problem: impl Into<String>) -> Error {
    Error::Keyset(KeysetError::Invalid {
        field: field.to_owned(),
        problem: problem.into(),
    })
}

impl StoredKeyset {
    /// Reads a stored document: the size cap first, then the envelope (a v2
    /// payload stays unparsed; a v1 document is parsed whole, as it has no tag).
    ///
    /// # Errors
    /// [`KeysetError::Invalid`] naming what is wrong.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        if bytes.len() > MAX_DOCUMENT_BYTES {
            return Err(bad(
                "document",
                format!(
                    "{} bytes, more than the {MAX_DOCUMENT_BYTES} a keyset document may have",
                    bytes.len()
                ),
            ));
        }
        let format = serde_json::from_slice::<FormatOnly>(bytes)
            .map_err(|e| bad("document", format!("not a keyset document: {e}")))?
            .format;
        match format.as_deref() {
            Some(KEYSET_FORMAT) => {
                let doc = Keyset::from_json(bytes)?;
                Ok(Self {
                    bytes: bytes.to_vec(),
                    id: doc.id.clone(),
                    generation: doc.generation,
                    form: Form::Unauthenticated(doc),
                })
            }
            Some(KEYSET_FORMAT_V2) => Self::envelope(bytes),
            other => Err(bad(
                "format",
                format!("expected {KEYSET_FORMAT_V2:?}, found {other:?}"),
            )),
        }
    }

    fn envelope(bytes: &[u8]) -> Result<Self, Error> {
        let raw: RawEnvelope = serde_json::from_slice(bytes)
            .map_err(|e| bad("document", format!("not a keyset document: {e}")))?;
        if !raw.id.starts_with("ks_") || raw.id.len() < 4 {
            return Err(bad("id", "must look like ks_<random>"));
        }
        let payload = b64_decode(&raw.payload).ok_or_else(|| bad("payload", "not valid base64"))?;
        let wrapped =
            b64_decode(&raw.mac.wrapped).ok_or_else(|| bad("mac.wrapped", "not valid base64"))?;
        let tag: [u8; TAG_LEN] = b64_decode(&raw.mac.tag)
            .and_then(|t| t.try_into().ok())
            .ok_or_else(|| bad("mac.tag", "must be 32 bytes of base64"))?;
        if wrapped.is_empty() {
            return Err(bad("mac.wrapped", "is empty"));
        }
        if crate::uri::scheme_of(&raw.mac.kek).is_err() {
            return Err(bad("mac.kek", "must be a KEK URI like aws-kms://ARN"));
        }
        Ok(Self {
            bytes: bytes.to_vec(),
            id: raw.id,
            generation: raw.generation,
            form: Form::Authenticated {
                payload,
                mac: MacKeyRef {
                    kek: raw.mac.kek,
                    wrapped,
                },
                tag,
            },
        })
    }

    /// `doc` as an authenticated document, tagged with `key` (the MAC key
    /// `mac` holds wrapped), stale after `expires_at`. Writers normally go
    /// through `rotation::VerifiedKeyset::seal_next`, which keeps the MAC key
    /// of the document they verified.
    ///
    /// # Errors
    /// [`KeysetError::Invalid`] when `doc` is invalid or an entry has no key id.
    pub fn seal(
        doc: &Keyset,
        expires_at: UnixTime,
        mac: &MacKeyRef,
        key: &MacKey,
    ) -> Result<Self, Error> {
        doc.validate()?;
        if let Some(i) = doc.keys.iter().position(|e| e.kid.is_none()) {
            return Err(bad(
                &format!("keys[{i}].kid"),
                "an authenticated keyset records every key id (unwrap the entry once to learn it)",
            ));
        }
        let payload = doc.payload_json(expires_at.as_secs_f64());
        let tag = key.tag(KEYSET_FORMAT_V2, &payload);
        let raw = RawEnvelope {
            format: KEYSET_FORMAT_V2.to_owned(),
            id: doc.id.clone(),
            generation: doc.generation,
            payload: base64_turbo::STANDARD.encode(&payload),
            mac: RawMac {
                kek: mac.kek.clone(),
                wrapped: base64_turbo::STANDARD.encode(&mac.wrapped),
                tag: base64_turbo::STANDARD.encode(tag),
            },
        };
        let mut bytes = serde_json::to_vec_pretty(&raw).unwrap_or_default();
        bytes.push(b'\n');
        Self::from_bytes(&bytes)
    }

    /// `doc` as an unauthenticated `stateseal.keyset/v1` document (what
    /// releases before authentication wrote; for migration and tests).
    ///
    /// # Errors
    /// [`KeysetError::Invalid`] when `doc` is invalid.
    pub fn unauthenticated(doc: &Keyset) -> Result<Self, Error> {
        doc.validate()?;
        if let Some(i) = doc
            .keys
            .iter()
            .position(|e| e.alg != crate::key::TokenFormat::V1)
        {
            return Err(bad(
                &format!("keys[{i}].alg"),
                "an unauthenticated document holds v1 keys only",
            ));
        }
        Self::from_bytes(&doc.to_json())
    }

    /// The exact bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The keyset id the document claims (unverified until the tag is).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The generation the document claims (unverified until the tag is); what
    /// stores compare-and-swap on.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether this is a `stateseal.keyset/v2` document.
    pub fn is_authenticated(&self) -> bool {
        matches!(self.form, Form::Authenticated { .. })
    }

    /// Where the MAC key is (v2 documents).
    pub fn mac_key_ref(&self) -> Option<&MacKeyRef> {
        match &self.form {
            Form::Authenticated { mac, .. } => Some(mac),
            Form::Unauthenticated(_) => None,
        }
    }

    /// The parsed content of a v1 document, which nothing authenticates.
    pub fn unauthenticated_content(&self) -> Option<&Keyset> {
        match &self.form {
            Form::Unauthenticated(doc) => Some(doc),
            Form::Authenticated { .. } => None,
        }
    }

    /// The content of a v2 document, once its tag verifies under `key`, with
    /// its `expires_at`. The clear id and generation must match the payload's.
    ///
    /// # Errors
    /// `Ok(None)` when the tag does not verify; [`KeysetError::Invalid`] for a payload
    /// that is invalid or disagrees with the clear fields.
    pub(crate) fn verified_content(
        &self,
        key: &MacKey,
    ) -> Result<Option<(Keyset, UnixTime)>, Error> {
        let Form::Authenticated { payload, tag, .. } = &self.form else {
            return Ok(None);
        };
        if !key.verify(KEYSET_FORMAT_V2, payload, tag) {
            return Ok(None);
        }
        let (doc, expires_at) = Keyset::from_payload(payload)?;
        if doc.id != self.id || doc.generation != self.generation {
            return Err(bad(
                "document",
                "the id or generation in the clear differs from the payload's",
            ));
        }
        // An RFC 3339 time parses to a finite number of seconds.
        let expires_at = UnixTime::from_secs_f64(expires_at)
            .ok_or_else(|| bad("payload.expires_at", "is not a time"))?;
        Ok(Some((doc, expires_at)))
    }
}

/// [`StoredKeyset`]'s content once its tag verifies under `key`: exposed for
/// fuzzing only (feature `internals`, no stability promise); everything else
/// goes through `rotation::KeysetTrust`.
///
/// # Errors
/// As the trust's payload checks: [`KeysetError::Invalid`] for an invalid payload.
#[cfg(feature = "internals")]
pub fn open_with(stored: &StoredKeyset, key: &MacKey) -> Result<Option<(Keyset, UnixTime)>, Error> {
    stored.verified_content(key)
}

#[cfg(test)]
mod tests;
