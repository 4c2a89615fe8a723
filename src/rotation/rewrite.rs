//! Operator writes that change no key: converting an unauthenticated
//! document to `stateseal.keyset/v2` ([`upgrade_keyset`]) and renewing a
//! document's freshness ([`renew_keyset`]). Both verify what they read first,
//! so neither re-tags a document a writer without the KEK made.

use std::time::Duration;

use super::newest::{judge_against_newest, newest_written, write_keyset};
use super::operations::{load_existing, operator_generation, primary_kek};
use super::proof::unwrap_entry;
use super::trust::{KeysetTrust, TrustPolicy, VerifiedKeyset, seal_with_new_mac_key};
use crate::clock::UnixTime;
use crate::error::{Error, KeysetError};
use crate::keyset::KeysetStore;
use crate::provider::ProviderRegistry;

/// Converts the store's `stateseal.keyset/v1` document to `stateseal.keyset/v2`,
/// one way: every entry is unwrapped (each must give the key id it records,
/// and entries that recorded none get theirs), a new MAC key is generated
/// under `mac_kek` (default: the primary's KEK, else the newest entry's), and
/// the same entries, timing and ids are written under a tag, fresh for
/// `validity` seconds. What was written is read back and verified under
/// `trust` before this returns.
///
/// `trust` says which keyset and KEKs are expected (its
/// `accept_unauthenticated` is implied here, for the document being converted).
///
/// # Errors
/// [`Error::Config`] when the document is already authenticated, or
/// `mac_kek` is not pinned; [`KeysetError::Refused`] when the v1 document
/// names another keyset or an unpinned KEK; provider errors naming the entry
/// that did not unwrap; [`KeysetError::Conflict`] when the store moved on;
/// [`KeysetError::BehindNewest`] when the document is a restored backup the fleet
/// has moved past.
pub async fn upgrade_keyset(
    store: &dyn KeysetStore,
    registry: &ProviderRegistry,
    trust: &TrustPolicy,
    mac_kek: Option<&str>,
    validity: Duration,
    now: UnixTime,
) -> Result<VerifiedKeyset, Error> {
    let at = now;
    let now = at.as_secs_f64();
    let stored = load_existing(store).await?;
    if stored.is_authenticated() {
        return Err(Error::Config(format!(
            "generation {} is already an authenticated (stateseal.keyset/v2) document; nothing to upgrade",
            stored.generation()
        )));
    }
    let reading = KeysetTrust::new(TrustPolicy {
        accept_unauthenticated: true,
        ..trust.clone()
    });
    let mut doc = reading.open(registry, store.uri(), &stored, at).await?.doc;
    for i in 0..doc.keys.len() {
        let (_, kid) = unwrap_entry(&doc, &doc.keys[i], registry)
            .await
            .map_err(|e| Error::Config(format!("entry {}: {e}", doc.keys[i].entry)))?;
        doc.keys[i].kid = Some(kid);
    }
    let kek = match mac_kek {
        Some(k) => k.to_owned(),
        None => primary_kek(&doc, super::timeline::ring_at(&doc, now).as_ref())
            .ok_or_else(|| Error::Config("the keyset has no entries".into()))?,
    };
    if let Some(pins) = &trust.pins
        && !pins.allows_kek(&kek)
    {
        return Err(Error::Config(format!(
            "the MAC key's KEK {kek} is not among the pinned KEKs"
        )));
    }
    let strict = KeysetTrust::new(TrustPolicy {
        accept_unauthenticated: false,
        ..trust.clone()
    });
    let base = doc.clone();
    doc.generation = operator_generation(base.generation, at);
    let newest = newest_written(store, registry, &strict, &base.id).await;
    judge_against_newest(store, &base, &mut doc, newest.as_ref(), now)?;
    let (sealed, _) = seal_with_new_mac_key(registry, &doc, &kek, at + validity).await?;
    write_keyset(store, Some(base.generation), &sealed).await?;
    let written = load_existing(store).await?;
    strict.open(registry, store.uri(), &written, at).await
}

/// Writes the store's document again with a new `expires_at` (`now` +
/// `validity`) and nothing else changed, under its own MAC key. The document
/// is verified first (tag, pins, minimum generation; a stale one is accepted,
/// as renewing it is the point), and must be generation `generation`: the
/// operator names what they renew, so a rolled-back document is not made
/// fresh by accident.
///
/// # Errors
/// [`KeysetError::Refused`]; [`KeysetError::Conflict`] when the stored generation is
/// not `generation`, or the store moved on; [`Error::Config`] for an
/// unauthenticated document (upgrade it instead); [`KeysetError::BehindNewest`]
/// when the document is a restored backup the fleet has moved past.
pub async fn renew_keyset(
    store: &dyn KeysetStore,
    registry: &ProviderRegistry,
    trust: &KeysetTrust,
    generation: u64,
    validity: Duration,
    now: UnixTime,
) -> Result<VerifiedKeyset, Error> {
    let at = now;
    let now = at.as_secs_f64();
    let stored = load_existing(store).await?;
    if stored.generation() != generation {
        return Err(Error::Keyset(KeysetError::Conflict {
            expected: Some(generation),
            found: Some(stored.generation()),
        }));
    }
    let verified = trust
        .open_ignoring_expiry(registry, store.uri(), &stored)
        .await?;
    let mut next = verified.doc.clone();
    next.generation = operator_generation(generation, at);
    let newest = newest_written(store, registry, trust, &next.id).await;
    judge_against_newest(store, &verified.doc, &mut next, newest.as_ref(), now)?;
    let sealed = verified.seal_next(&next, at + validity)?;
    write_keyset(store, Some(generation), &sealed).await?;
    trust
        .open(registry, store.uri(), &load_existing(store).await?, at)
        .await
}
