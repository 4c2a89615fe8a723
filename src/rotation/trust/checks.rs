//! The checks of a stored document, in the design's order (see the parent
//! module): what `KeysetTrust::open` runs.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{KeysetTrust, VerifiedKeyset, refuse};
use crate::clock::UnixTime;
use crate::error::KeysetRefusal;
use crate::error::{Error, KeysetError};
use crate::keyset::{KeyEntry, KeysetPins, MAC_PURPOSE, MacKey, MacKeyRef, StoredKeyset};
use crate::provider::{ErrorClass, ProviderRegistry, WrapContext};

impl KeysetTrust {
    pub(super) async fn open_inner(
        &self,
        registry: &ProviderRegistry,
        uri: &str,
        stored: &StoredKeyset,
        now: Option<UnixTime>,
    ) -> Result<VerifiedKeyset, Error> {
        if let Some(pins) = &self.policy.pins
            && stored.id() != pins.keyset_id()
        {
            return Err(refuse(
                uri,
                KeysetRefusal::OtherKeyset,
                format!(
                    "the document is keyset {} but this instance is pinned to keyset {}",
                    stored.id(),
                    pins.keyset_id()
                ),
            ));
        }
        if stored.generation() < self.policy.min_generation {
            return Err(refuse(
                uri,
                KeysetRefusal::BelowMinimum,
                format!(
                    "generation {} is below the configured min_generation {}",
                    stored.generation(),
                    self.policy.min_generation
                ),
            ));
        }
        let verified = match stored.mac_key_ref() {
            None => self.open_unauthenticated(uri, stored)?,
            Some(r) => {
                self.open_authenticated(registry, uri, stored, r, now.map(UnixTime::as_secs_f64))
                    .await?
            }
        };
        for (i, e) in verified.doc.keys.iter().enumerate() {
            self.check_kek(uri, &format!("keys[{i}] ({})", e.entry), e)?;
        }
        if let Some(now) = now {
            Self::check_fresh(uri, &verified, now)?;
        }
        Ok(verified)
    }

    fn check_kek(&self, uri: &str, what: &str, e: &KeyEntry) -> Result<(), Error> {
        match &self.policy.pins {
            Some(pins) if !pins.allows_kek(&e.kek) => Err(refuse(
                uri,
                KeysetRefusal::UnpinnedKek,
                format!(
                    "{what} is wrapped under a KEK the configuration does not pin: {}",
                    e.kek
                ),
            )),
            _ => Ok(()),
        }
    }

    fn open_unauthenticated(
        &self,
        uri: &str,
        stored: &StoredKeyset,
    ) -> Result<VerifiedKeyset, Error> {
        let Some(doc) = stored.unauthenticated_content() else {
            return Err(refuse(uri, KeysetRefusal::Invalid, "no content".into()));
        };
        if !self.policy.accept_unauthenticated {
            return Err(refuse(
                uri,
                KeysetRefusal::Unauthenticated,
                "the document is stateseal.keyset/v1, which nothing authenticates; convert it with `stateseal keyset upgrade`, or set accept_unauthenticated_keyset = true for the migration".into(),
            ));
        }
        metrics::counter!("stateseal_keyset_unauthenticated_reads_total").increment(1);
        tracing::warn!(
            store = uri,
            generation = stored.generation(),
            "adopting an unauthenticated keyset document (accept_unauthenticated_keyset = true); anyone who can write the store can change its keys until `stateseal keyset upgrade` converts it"
        );
        Ok(VerifiedKeyset {
            doc: doc.clone(),
            expires_at: None,
            mac: None,
        })
    }

    async fn open_authenticated(
        &self,
        registry: &ProviderRegistry,
        uri: &str,
        stored: &StoredKeyset,
        r: &MacKeyRef,
        now: Option<f64>,
    ) -> Result<VerifiedKeyset, Error> {
        if let Some(pins) = &self.policy.pins
            && !pins.allows_kek(&r.kek)
        {
            return Err(refuse(
                uri,
                KeysetRefusal::UnpinnedKek,
                format!(
                    "the document's MAC key is wrapped under a KEK the configuration does not pin: {}",
                    r.kek
                ),
            ));
        }
        // The reader fixes the context itself: the pinned id (or, unpinned, the claimed one).
        let keyset_id = self
            .policy
            .pins
            .as_ref()
            .map_or(stored.id(), KeysetPins::keyset_id)
            .to_owned();
        let key = self.mac_key(registry, uri, &keyset_id, r, now).await?;
        match stored.verified_content(&key) {
            Ok(Some((doc, expires_at))) => Ok(VerifiedKeyset {
                doc,
                expires_at: Some(expires_at),
                mac: Some((r.clone(), key)),
            }),
            Ok(None) => Err(refuse(
                uri,
                KeysetRefusal::Mac,
                format!(
                    "generation {}: the tag does not verify (the payload or tag was changed without the KEK)",
                    stored.generation()
                ),
            )),
            Err(Error::Keyset(KeysetError::Invalid { field, problem })) => Err(refuse(
                uri,
                KeysetRefusal::Invalid,
                format!("{field}: {problem}"),
            )),
            Err(e) => Err(e),
        }
    }

    async fn mac_key(
        &self,
        registry: &ProviderRegistry,
        uri: &str,
        keyset_id: &str,
        r: &MacKeyRef,
        now: Option<f64>,
    ) -> Result<Arc<MacKey>, Error> {
        if let Some(key) = self.mac_keys.get(keyset_id, r) {
            return Ok(key);
        }
        if now.is_some_and(|now| self.mac_keys.refused(keyset_id, r, now)) {
            return Err(refuse(
                uri,
                KeysetRefusal::Mac,
                format!(
                    "the MAC key does not unwrap for keyset {keyset_id} (the KMS refused it within the last {:.0}s; not asked again yet)",
                    super::super::mac_keys::REFUSAL_HOLD
                ),
            ));
        }
        let provider = registry.provider_for(&r.kek)?;
        self.kms_calls.fetch_add(1, Ordering::Relaxed);
        let ctx = WrapContext {
            keyset_id,
            entry_id: MAC_PURPOSE,
        };
        let secret = match provider.unwrap(&r.kek, &r.wrapped, ctx).await {
            Ok(s) => s,
            Err(e) => {
                // The KMS refused the wrap itself (wrong context, not its ciphertext,
                // no such key): held for a while so that junk costs one call, not one per refresh.
                let class = e.kms_class();
                if let Some(now) = now
                    && matches!(class, Some(ErrorClass::Invalid | ErrorClass::Denied))
                {
                    self.mac_keys.refuse(keyset_id, r, now);
                }
                if class == Some(ErrorClass::Invalid) {
                    return Err(refuse(
                        uri,
                        KeysetRefusal::Mac,
                        format!("the MAC key does not unwrap for keyset {keyset_id}: {e}"),
                    ));
                }
                return Err(e);
            }
        };
        let key = Arc::new(MacKey::from_secret(&secret)?);
        self.mac_keys.keep(keyset_id, r, key.clone());
        Ok(key)
    }
}
