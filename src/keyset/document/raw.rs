//! The document as it is written: the serde form of a [`Keyset`], parsed
//! strictly (unknown fields refused, each value checked and named when bad)
//! and rendered in a stable field order.

use serde::{Deserialize, Serialize};

use super::super::claim::RawClaim;
use super::super::revocation::{MAX_REVOCATIONS, RawRevocation};
use super::super::rfc3339::{format_rfc3339, is_representable_secs, parse_rfc3339};
use super::super::timing::Timing;
use super::{
    ALG_V1_AES_256_GCM, ALG_V2_XAES_256_GCM, KEYSET_FORMAT, KeyEntry, Keyset, MAX_ENTRIES,
    alg_name, alg_of, b64_decode, bad,
};
use crate::clock::UnixTime;
use crate::error::Error;
use crate::key::{KeyId, TokenFormat};

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKeyset {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    format: Option<String>,
    id: String,
    generation: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    timing: Option<RawTiming>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rotation_claim: Option<RawClaim>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    revocations: Vec<RawRevocation>,
    keys: Vec<RawEntry>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTiming {
    refresh_interval: f64,
    max_skew: f64,
    state_ttl: f64,
    propagation: f64,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    entry: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    alg: Option<String>,
    kek: String,
    wrapped: String,
    created_at: String,
    activate_at: String,
    retire_at: Option<String>,
    #[serde(default, skip_serializing_if = "is_zero")]
    seals_reserved: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Keyset {
    /// Parses and validates an unauthenticated `stateseal.keyset/v1` document.
    ///
    /// # Errors
    /// [`KeysetError::Invalid`](crate::KeysetError::Invalid) naming the first invalid field.
    pub fn from_json(bytes: &[u8]) -> Result<Self, Error> {
        let raw: RawKeyset = serde_json::from_slice(bytes)
            .map_err(|e| bad("document", format!("not a keyset document: {e}")))?;
        if raw.format.as_deref() != Some(KEYSET_FORMAT) {
            return Err(bad(
                "format",
                format!("expected {KEYSET_FORMAT:?}, found {:?}", raw.format),
            ));
        }
        if raw.expires_at.is_some()
            || raw.rotation_claim.is_some()
            || !raw.revocations.is_empty()
            || raw.keys.iter().any(|e| e.alg.is_some())
        {
            return Err(bad(
                "document",
                "expires_at, rotation_claim, revocations and alg belong in an authenticated (v2) payload",
            ));
        }
        Self::from_raw(raw)
    }

    /// Parses and validates the payload of a `stateseal.keyset/v2` document,
    /// whose tag the caller has verified; returns it and its `expires_at`.
    ///
    /// # Errors
    /// [`KeysetError::Invalid`](crate::KeysetError::Invalid) naming the first invalid field.
    pub(crate) fn from_payload(bytes: &[u8]) -> Result<(Self, f64), Error> {
        let raw: RawKeyset = serde_json::from_slice(bytes)
            .map_err(|e| bad("payload", format!("not a keyset payload: {e}")))?;
        if raw.format.is_some() {
            return Err(bad("payload.format", "belongs in the envelope"));
        }
        let expires_at = raw
            .expires_at
            .as_deref()
            .ok_or_else(|| bad("payload.expires_at", "is missing"))
            .and_then(|t| parse_rfc3339(t).map_err(|p| bad("payload.expires_at", p)))?;
        for (i, e) in raw.keys.iter().enumerate() {
            if e.alg.is_none() {
                return Err(bad(format!("keys[{i}].alg"), "is missing"));
            }
            if e.kid.is_none() {
                return Err(bad(format!("keys[{i}].kid"), "is missing"));
            }
        }
        let doc = Self::from_raw(raw)?;
        if !is_representable_secs(expires_at) {
            return Err(bad("payload.expires_at", "must be between 1970 and 9999"));
        }
        Ok((doc, expires_at))
    }

    fn from_raw(raw: RawKeyset) -> Result<Self, Error> {
        // Caps first, before any entry is parsed.
        if raw.revocations.len() > MAX_REVOCATIONS {
            return Err(bad(
                "revocations",
                format!(
                    "{} entries, more than the {} a keyset may hold",
                    raw.revocations.len(),
                    MAX_REVOCATIONS
                ),
            ));
        }
        if raw.keys.len() > MAX_ENTRIES {
            return Err(bad(
                "keys",
                format!(
                    "{} entries, more than the {MAX_ENTRIES} a keyset may hold",
                    raw.keys.len()
                ),
            ));
        }
        let mut keys = Vec::with_capacity(raw.keys.len());
        for (i, e) in raw.keys.into_iter().enumerate() {
            let field = |name: &str| format!("keys[{i}].{name}");
            let time = |name: &str, v: &str| {
                parse_rfc3339(v)
                    .map(UnixTime::from_finite_secs)
                    .map_err(|p| bad(field(name), p))
            };
            let wrapped =
                b64_decode(&e.wrapped).ok_or_else(|| bad(field("wrapped"), "not valid base64"))?;
            let kid = e
                .kid
                .as_deref()
                .map(|k| {
                    KeyId::from_hex(k).ok_or_else(|| bad(field("kid"), "must be 8 hex digits"))
                })
                .transpose()?;
            let alg = match e.alg.as_deref() {
                None => TokenFormat::V1,
                Some(name) => alg_of(name).ok_or_else(|| {
                    bad(
                        field("alg"),
                        format!(
                            "{name:?} is not an algorithm this release knows ({ALG_V1_AES_256_GCM:?}, {ALG_V2_XAES_256_GCM:?})"
                        ),
                    )
                })?,
            };
            keys.push(KeyEntry {
                kid,
                alg,
                created_at: time("created_at", &e.created_at)?,
                activate_at: time("activate_at", &e.activate_at)?,
                retire_at: e
                    .retire_at
                    .as_deref()
                    .map(|r| time("retire_at", r))
                    .transpose()?,
                entry: e.entry,
                kek: e.kek,
                wrapped,
                seals_reserved: e.seals_reserved,
            });
        }
        let doc = Self {
            id: raw.id,
            generation: raw.generation,
            keys,
            timing: raw
                .timing
                .map(|t| {
                    Timing::try_from_secs_f64(
                        t.refresh_interval,
                        t.max_skew,
                        t.state_ttl,
                        Some(t.propagation),
                    )
                    .map_err(|e| bad("timing", e.to_string()))
                })
                .transpose()?,
            rotation_claim: raw.rotation_claim.map(RawClaim::into_claim).transpose()?,
            revocations: raw
                .revocations
                .into_iter()
                .enumerate()
                .map(|(i, r)| r.into_entry(i))
                .collect::<Result<_, _>>()?,
        };
        doc.validate()?;
        Ok(doc)
    }

    /// The unauthenticated `stateseal.keyset/v1` form (pretty-printed, stable
    /// field order): what releases before authentication wrote.
    pub fn to_json(&self) -> Vec<u8> {
        self.render(Some(KEYSET_FORMAT), None)
    }

    /// The payload of a `stateseal.keyset/v2` document: every entry with its
    /// algorithm, and the time after which the document counts as stale.
    /// Every entry must have its key id recorded.
    pub(crate) fn payload_json(&self, expires_at: f64) -> Vec<u8> {
        self.render(None, Some(expires_at))
    }

    fn render(&self, format: Option<&str>, expires_at: Option<f64>) -> Vec<u8> {
        let raw = RawKeyset {
            format: format.map(str::to_owned),
            id: self.id.clone(),
            generation: self.generation,
            expires_at: expires_at.map(format_rfc3339),
            timing: self.timing.map(|t| RawTiming {
                refresh_interval: t.refresh_interval.as_secs_f64(),
                max_skew: t.max_skew.as_secs_f64(),
                state_ttl: t.ttl.as_secs_f64(),
                propagation: t.propagation.as_secs_f64(),
            }),
            // The unauthenticated form never carries one.
            rotation_claim: self
                .rotation_claim
                .as_ref()
                .filter(|_| expires_at.is_some())
                .map(RawClaim::from_claim),
            revocations: self
                .revocations
                .iter()
                .filter(|_| expires_at.is_some())
                .map(RawRevocation::from_entry)
                .collect(),
            keys: self
                .keys
                .iter()
                .map(|e| RawEntry {
                    entry: e.entry.clone(),
                    kid: e.kid.map(KeyId::to_hex),
                    alg: expires_at.map(|_| alg_name(e.alg).to_owned()),
                    kek: e.kek.clone(),
                    wrapped: base64_turbo::STANDARD.encode(&e.wrapped),
                    created_at: format_rfc3339(e.created_at.as_secs_f64()),
                    activate_at: format_rfc3339(e.activate_at.as_secs_f64()),
                    retire_at: e.retire_at.map(|r| format_rfc3339(r.as_secs_f64())),
                    seals_reserved: e.seals_reserved,
                })
                .collect(),
        };
        let mut out = serde_json::to_vec_pretty(&raw).unwrap_or_default();
        out.push(b'\n');
        out
    }
}
