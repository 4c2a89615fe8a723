//! The keyset's content: wrapped data keys and their timeline.
//!
//! It holds only wrapped keys, so it is safe to store anywhere (a file, Vault
//! KV, S3). It is written as the MAC-covered payload of a
//! `stateseal.keyset/v2` document (see `sealed`), or, before authentication,
//! as a whole `stateseal.keyset/v1` document. Parsing is strict: unknown
//! fields, duplicate entries, bad timestamps and bad base64 are errors that
//! name the field.

mod raw;

use super::claim::RotationClaim;
use super::rfc3339::is_representable;
use super::timing::Timing;
use crate::clock::UnixTime;
use crate::error::{Error, KeysetError};
use crate::key::{KeyId, TokenFormat};
use crate::revocation::Revocation;

/// The unauthenticated document's format tag (read for migration only, unless configured).
pub const KEYSET_FORMAT: &str = "stateseal.keyset/v1";

/// The algorithm of entries that seal `v1.` tokens (AES-256-GCM, with a seal
/// budget): every entry written before `v2.` tokens. A v2 payload names an
/// algorithm in every entry, a reader refuses any other value, and admission
/// refuses a change, so an entry's algorithm can never change under it.
pub const ALG_V1_AES_256_GCM: &str = "v1-aes-256-gcm";

/// The algorithm of entries that seal `v2.` tokens (XAES-256-GCM, no seal
/// budget): what `init` and every rotation write.
pub const ALG_V2_XAES_256_GCM: &str = "v2-xaes-256-gcm";

/// The algorithm name of a token format, as entries carry it.
pub fn alg_name(format: TokenFormat) -> &'static str {
    match format {
        TokenFormat::V1 => ALG_V1_AES_256_GCM,
        TokenFormat::V2 => ALG_V2_XAES_256_GCM,
    }
}

fn alg_of(name: &str) -> Option<TokenFormat> {
    match name {
        ALG_V1_AES_256_GCM => Some(TokenFormat::V1),
        ALG_V2_XAES_256_GCM => Some(TokenFormat::V2),
        _ => None,
    }
}

/// Most entries a document may hold (steady state holds one or two).
pub const MAX_ENTRIES: usize = 64;

/// One wrapped data key and when it seals and unseals.
#[derive(Clone, PartialEq)]
pub struct KeyEntry {
    /// Entry id (`k_…`), unique in the document; bound into the wrap context.
    pub entry: String,
    /// The data key's key id, recorded when it was written (`None` in documents
    /// from before key ids were recorded). Not secret: every token carries it.
    /// Lets operators see key ids without KMS access, and readers check that
    /// what they unwrap is the key that was written.
    pub kid: Option<KeyId>,
    /// The token format the key seals (`alg` in the document), fixed for
    /// the entry's life; `V1` in documents from before `v2.` tokens.
    pub alg: TokenFormat,
    /// The KEK URI that wrapped it (`local://…`, `aws-kms://…`, …).
    pub kek: String,
    /// The wrapped data key, as the KMS returned it.
    pub wrapped: Vec<u8>,
    /// When the entry was written.
    pub created_at: UnixTime,
    /// From when it is the primary (sealing) key, unless a later key is.
    pub activate_at: UnixTime,
    /// From when it no longer unseals (`None`: not scheduled).
    pub retire_at: Option<UnixTime>,
    /// Seals the whole fleet has reserved under this key, so far (instances
    /// reserve blocks before they seal; see `SchedulerConfig::max_seals_per_key`).
    pub seals_reserved: u64,
}

impl std::fmt::Debug for KeyEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyEntry")
            .field("entry", &self.entry)
            .field("kid", &self.kid)
            .field("alg", &self.alg)
            .field("kek", &self.kek)
            .field("activate_at", &self.activate_at)
            .field("retire_at", &self.retire_at)
            .field("seals_reserved", &self.seals_reserved)
            .finish_non_exhaustive()
    }
}

/// A keyset: the shared source of every instance's key ring.
#[derive(Debug, Clone, PartialEq)]
pub struct Keyset {
    /// Keyset id (`ks_…`); bound into every wrap context.
    pub id: String,
    /// Incremented by every write; compare-and-swap is on this number.
    pub generation: u64,
    /// The entries, in the order written.
    pub keys: Vec<KeyEntry>,
    /// The fleet's timing profile, written by `init` (`None` in documents from
    /// before profiles: rotations then use the caller's timing).
    pub timing: Option<Timing>,
    /// A server's claim on the next rotation (authenticated documents only;
    /// every rotation clears it).
    pub rotation_claim: Option<RotationClaim>,
    /// States refused although they verify (authenticated documents only),
    /// in the order written; see `keyset::revocation` for how long each stays.
    pub revocations: Vec<Revocation>,
}

fn bad(field: impl Into<String>, problem: impl Into<String>) -> Error {
    Error::Keyset(KeysetError::Invalid {
        field: field.into(),
        problem: problem.into(),
    })
}

pub(crate) fn b64_decode(text: &str) -> Option<Vec<u8>> {
    base64_turbo::STANDARD.decode(text).ok()
}

impl Keyset {
    /// Checks the invariants every reader relies on.
    ///
    /// # Errors
    /// [`KeysetError::Invalid`] naming the first invalid field.
    pub fn validate(&self) -> Result<(), Error> {
        if !self.id.starts_with("ks_") || self.id.len() < 4 {
            return Err(bad("id", "must look like ks_<random>"));
        }
        if self.keys.is_empty() {
            return Err(bad("keys", "a keyset needs at least one key"));
        }
        if let Some(t) = &self.timing {
            t.validate().map_err(|e| bad("timing", e.to_string()))?;
        }
        if let Some(c) = &self.rotation_claim {
            super::claim::validate(c)?;
        }
        super::revocation::validate(&self.revocations)?;
        for (i, e) in self.keys.iter().enumerate() {
            if !e.entry.starts_with("k_") || e.entry.len() < 3 {
                return Err(bad(format!("keys[{i}].entry"), "must look like k_<random>"));
            }
            if self.keys[..i].iter().any(|o| o.entry == e.entry) {
                return Err(bad(
                    format!("keys[{i}].entry"),
                    format!("duplicates an earlier entry {:?}", e.entry),
                ));
            }
            if e.kek
                .split_once("://")
                .is_none_or(|(scheme, rest)| scheme.is_empty() || rest.is_empty())
            {
                return Err(bad(
                    format!("keys[{i}].kek"),
                    "must be a KEK URI like local://PATH or aws-kms://ARN",
                ));
            }
            if e.wrapped.is_empty() {
                return Err(bad(format!("keys[{i}].wrapped"), "is empty"));
            }
            let times = [
                ("created_at", Some(e.created_at)),
                ("activate_at", Some(e.activate_at)),
                ("retire_at", e.retire_at),
            ];
            for (name, t) in times {
                if let Some(t) = t
                    && !is_representable(t)
                {
                    return Err(bad(
                        format!("keys[{i}].{name}"),
                        "must be between 1970 and 9999 (Unix seconds, not milliseconds)",
                    ));
                }
            }
            if let Some(r) = e.retire_at
                && r < e.activate_at
            {
                return Err(bad(format!("keys[{i}].retire_at"), "is before activate_at"));
            }
        }
        Ok(())
    }

    /// The entry named `entry`.
    pub fn entry(&self, entry: &str) -> Option<&KeyEntry> {
        self.keys.iter().find(|e| e.entry == entry)
    }

    /// The generation a write based on this document carries.
    ///
    /// # Errors
    /// [`KeysetError::Invalid`] when the generation cannot grow any more (`u64::MAX`).
    pub fn next_generation(&self) -> Result<u64, Error> {
        self.generation
            .checked_add(1)
            .ok_or_else(|| bad("generation", "is at its maximum; start a new keyset"))
    }
}

/// A fresh random id with `prefix` (`ks_`, `k_`): 16 random bytes, base32-ish lowercase hex.
///
/// # Errors
/// [`DataError::Random`](crate::DataError::Random) when the OS cannot supply randomness.
pub(crate) fn random_id(prefix: &str) -> Result<String, Error> {
    let mut b = [0u8; 12];
    crate::random::fill_os(&mut b)?;
    let mut s = String::with_capacity(prefix.len() + 24);
    s.push_str(prefix);
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    Ok(s)
}

#[cfg(test)]
mod tests;
