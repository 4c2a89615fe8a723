//! Whether to believe a stored keyset document, checked in the design's order:
//! size cap and envelope (when the store read it), pins, the MAC key's bound
//! unwrap, the tag, the payload, every KEK against the pins, freshness.
//! Admission against the last adopted document follows (`admission`).
//!
//! A document that fails here costs at most one KMS call (the MAC key's
//! unwrap), and none when it names a keyset or a KEK the pins do not allow,
//! or a MAC key reference the KMS refused before.

mod checks;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::mac_keys::MacKeys;
use crate::clock::UnixTime;
use crate::error::Error;
use crate::error::KeysetRefusal;
use crate::keyset::{Keyset, KeysetPins, MAC_PURPOSE, MacKey, MacKeyRef, StoredKeyset};
use crate::provider::{ProviderRegistry, WrapContext};

/// How long a write keeps a document fresh, unless configured: 7 days.
/// Writers renew it when less than half is left.
pub const DEFAULT_KEYSET_VALIDITY: std::time::Duration = std::time::Duration::from_secs(7 * 86_400);

/// What an instance (or the CLI) trusts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrustPolicy {
    /// The keyset id and KEKs the document may use (`None`: unpinned, for
    /// `file://` stores only).
    pub pins: Option<KeysetPins>,
    /// Read `stateseal.keyset/v1` (unauthenticated) documents, with a warning
    /// at every refresh: for the migration window only.
    pub accept_unauthenticated: bool,
    /// Refuse documents below this generation (a restored pre-compromise backup).
    pub min_generation: u64,
}

impl TrustPolicy {
    /// Checks the policy fits the store: a store other than `file://` needs
    /// pins, since whoever writes it could otherwise pick the keys.
    ///
    /// # Errors
    /// [`Error::Config`] naming the missing settings.
    pub fn check_for_store(&self, store_uri: &str) -> Result<(), Error> {
        if self.pins.is_none() && !store_uri.starts_with("file:") {
            return Err(Error::Config(format!(
                "a keyset in {store_uri} needs pins: set keyset_id and keyset_keks (what `stateseal init` printed), so that writing the store is never enough to choose the fleet's keys"
            )));
        }
        Ok(())
    }
}

/// A document that passed every check, with what a writer needs to write the next one.
#[derive(Debug, Clone)]
pub struct VerifiedKeyset {
    /// The content.
    pub doc: Keyset,
    /// When it goes stale (`None` for an accepted unauthenticated document).
    pub expires_at: Option<UnixTime>,
    mac: Option<(MacKeyRef, Arc<MacKey>)>,
}

impl VerifiedKeyset {
    /// Whether the document was authenticated (v2) rather than accepted unauthenticated.
    pub fn is_authenticated(&self) -> bool {
        self.mac.is_some()
    }

    /// Whether a writer should renew it at `now`: less than half of `validity`
    /// left (never for an unauthenticated document, which nothing writes).
    pub fn renewal_due(&self, now: UnixTime, validity: Duration) -> bool {
        self.is_authenticated()
            && self.expires_at.is_some_and(|at| {
                at.as_secs_f64() - now.as_secs_f64() < validity.as_secs_f64() / 2.0
            })
    }

    /// The KEK the MAC key is wrapped under (authenticated documents).
    pub fn mac_kek(&self) -> Option<&str> {
        self.mac.as_ref().map(|(r, _)| r.kek.as_str())
    }

    /// `next` as a document under the same MAC key, fresh until `expires_at`.
    ///
    /// # Errors
    /// [`Error::Config`] when this document was unauthenticated (upgrade it
    /// first); [`KeysetError::Invalid`](crate::KeysetError::Invalid) for an invalid `next`.
    pub fn seal_next(&self, next: &Keyset, expires_at: UnixTime) -> Result<StoredKeyset, Error> {
        let (r, key) = self.mac.as_ref().ok_or_else(|| {
            Error::Config(
                "the keyset is unauthenticated (stateseal.keyset/v1); nothing writes it until \
                 `stateseal keyset upgrade` has converted it"
                    .into(),
            )
        })?;
        StoredKeyset::seal(next, expires_at, r, key)
    }
}

/// `doc` as a new authenticated document under a fresh MAC key generated with
/// `kek` (one KMS call): `stateseal init` and `stateseal keyset upgrade`.
///
/// # Errors
/// Provider errors; [`KeysetError::Invalid`](crate::KeysetError::Invalid) for an invalid `doc` (every entry needs its key id).
pub async fn seal_with_new_mac_key(
    registry: &ProviderRegistry,
    doc: &Keyset,
    kek: &str,
    expires_at: UnixTime,
) -> Result<(StoredKeyset, VerifiedKeyset), Error> {
    let provider = registry.provider_for(kek)?;
    let ctx = WrapContext {
        keyset_id: &doc.id,
        entry_id: MAC_PURPOSE,
    };
    let dk = provider.generate(kek, ctx).await?;
    let key = Arc::new(MacKey::from_secret(&dk.plaintext)?);
    let r = MacKeyRef {
        kek: kek.to_owned(),
        wrapped: dk.wrapped,
    };
    let stored = StoredKeyset::seal(doc, expires_at, &r, &key)?;
    let verified = VerifiedKeyset {
        doc: doc.clone(),
        expires_at: Some(expires_at),
        mac: Some((r, key)),
    };
    Ok((stored, verified))
}

/// Verifies stored documents under a [`TrustPolicy`], keeping the MAC keys it
/// unwrapped and, for a while, the MAC key references the KMS refused.
pub struct KeysetTrust {
    policy: TrustPolicy,
    mac_keys: MacKeys,
    kms_calls: AtomicU64,
}

impl std::fmt::Debug for KeysetTrust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeysetTrust")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

fn refuse(store: &str, reason: KeysetRefusal, detail: String) -> Error {
    reason.record(store, detail)
}

impl KeysetTrust {
    /// A verifier for `policy`.
    pub fn new(policy: TrustPolicy) -> Self {
        Self {
            policy,
            mac_keys: MacKeys::default(),
            kms_calls: AtomicU64::new(0),
        }
    }

    /// The policy in force.
    pub fn policy(&self) -> &TrustPolicy {
        &self.policy
    }

    /// KMS calls made to unwrap MAC keys.
    pub fn kms_calls(&self) -> u64 {
        self.kms_calls.load(Ordering::Relaxed)
    }

    /// Checks `stored` (read from store `uri`) at `now`; every refusal is
    /// counted in `stateseal_keyset_rejected_total{reason}` and logged.
    ///
    /// # Errors
    /// [`KeysetError::Refused`](crate::KeysetError::Refused) naming the reason; provider errors when the MAC
    /// key cannot be unwrapped for a reason that is not the document's (an
    /// outage, a denied KEK).
    pub async fn open(
        &self,
        registry: &ProviderRegistry,
        uri: &str,
        stored: &StoredKeyset,
        now: UnixTime,
    ) -> Result<VerifiedKeyset, Error> {
        self.open_inner(registry, uri, stored, Some(now)).await
    }

    /// [`KeysetTrust::open`] without the freshness check: for an operator who
    /// renews or inspects a stale document. Every other check holds.
    ///
    /// # Errors
    /// As [`KeysetTrust::open`], but never refused as `expired`.
    pub async fn open_ignoring_expiry(
        &self,
        registry: &ProviderRegistry,
        uri: &str,
        stored: &StoredKeyset,
    ) -> Result<VerifiedKeyset, Error> {
        self.open_inner(registry, uri, stored, None).await
    }

    /// Whether `verified`, opened earlier, is still fresh at `now` (what a
    /// conditional read that finds the document unchanged still has to ask).
    ///
    /// # Errors
    /// [`KeysetError::Refused`](crate::KeysetError::Refused) (`expired`) past its `expires_at`.
    pub fn check_fresh(uri: &str, verified: &VerifiedKeyset, now: UnixTime) -> Result<(), Error> {
        match verified.expires_at {
            Some(expires_at) if now >= expires_at => Err(refuse(
                uri,
                KeysetRefusal::Expired,
                format!(
                    "generation {} went stale {:.0}s ago; a writer with the KEK renews it (`stateseal rotate`, `stateseal keyset renew`, or a server that may write)",
                    verified.doc.generation,
                    now.as_secs_f64() - expires_at.as_secs_f64()
                ),
            )),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests;
