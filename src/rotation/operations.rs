//! Keyset operations shared by the scheduler, setup and the CLI: create a
//! keyset, and rotate one with a single compare-and-swap write.

use super::config::SchedulerConfig;
use super::timeline::{RotateMode, ring_at, rotated};
use crate::error::Error;
use crate::keyset::{KeyEntry, Keyset, KeysetStore, random_id};
use crate::provider::{ProviderRegistry, WrapContext};

/// Writes a new keyset with one key, active from `now` (`stateseal init`).
///
/// # Errors
/// [`Error::Conflict`] when the store already holds a keyset; provider errors.
pub async fn init_keyset(
    store: &dyn KeysetStore,
    registry: &ProviderRegistry,
    kek: &str,
    now: f64,
) -> Result<Keyset, Error> {
    if let Some(existing) = store.load().await? {
        return Err(Error::Conflict {
            expected: None,
            found: Some(existing.generation),
        });
    }
    let id = random_id("ks_")?;
    let entry = random_id("k_")?;
    let provider = registry.provider_for(kek)?;
    let dk = provider
        .generate(
            kek,
            WrapContext {
                keyset_id: &id,
                entry_id: &entry,
            },
        )
        .await?;
    let doc = Keyset {
        id,
        generation: 1,
        keys: vec![KeyEntry {
            entry,
            kek: kek.to_owned(),
            wrapped: dk.wrapped,
            created_at: now,
            activate_at: now,
            retire_at: None,
            seals_reserved: 0,
        }],
    };
    store.compare_and_swap(None, &doc).await?;
    Ok(doc)
}

/// One rotation against a store: generate a data key under the current
/// primary's KEK, plan the timeline, compare-and-swap. Used by the scheduler and the CLI.
///
/// # Errors
/// [`Error::RotationInFlight`], [`Error::Conflict`], store and provider errors.
pub async fn rotate_store_at(
    store: &dyn KeysetStore,
    registry: &ProviderRegistry,
    config: &SchedulerConfig,
    now: f64,
    mode: RotateMode,
) -> Result<Keyset, Error> {
    rotate_vetted(store, registry, config, now, mode, &|_| Ok(())).await
}

/// [`rotate_store_at`], with `vet` run on every document it is about to build
/// on (the scheduler refuses documents older than the one it serves).
///
/// Servers write the keyset too (seal reservations): a write that lost only to
/// such a write is retried on the new document; one that lost to another
/// rotation (the entries changed) is not.
pub(crate) async fn rotate_vetted(
    store: &dyn KeysetStore,
    registry: &ProviderRegistry,
    config: &SchedulerConfig,
    now: f64,
    mode: RotateMode,
    vet: &(dyn Fn(&Keyset) -> Result<(), Error> + Sync),
) -> Result<Keyset, Error> {
    let mut doc = load_existing(store).await?;
    vet(&doc)?;
    let mut retries = RESERVATION_RETRIES;
    loop {
        match rotate_loaded(store, registry, config, &doc, now, mode).await {
            Err(Error::Conflict { .. }) if retries > 0 => {
                retries -= 1;
                let stored = load_existing(store).await?;
                let same_entries = stored.keys.len() == doc.keys.len()
                    && stored
                        .keys
                        .iter()
                        .zip(&doc.keys)
                        .all(|(a, b)| a.entry == b.entry);
                if !same_entries {
                    return Err(Error::Conflict {
                        expected: Some(doc.generation),
                        found: Some(stored.generation),
                    });
                }
                vet(&stored)?;
                doc = stored;
            }
            result => return result,
        }
    }
}

/// How often a rotation retries after losing to a seal reservation.
const RESERVATION_RETRIES: usize = 4;

/// The store's document, or an error that says how to create one.
pub(crate) async fn load_existing(store: &dyn KeysetStore) -> Result<Keyset, Error> {
    store.load().await?.ok_or_else(|| Error::Store {
        uri: store.uri().to_owned(),
        problem: "no keyset document; create one with `stateseal init`".into(),
    })
}

/// [`rotate_store_at`] on a document the caller has already loaded (and vetted).
async fn rotate_loaded(
    store: &dyn KeysetStore,
    registry: &ProviderRegistry,
    config: &SchedulerConfig,
    doc: &Keyset,
    now: f64,
    mode: RotateMode,
) -> Result<Keyset, Error> {
    if mode == RotateMode::Scheduled
        && let Some(why) = super::timeline::in_flight(doc, now)
    {
        return Err(Error::RotationInFlight(why));
    }
    let kek = ring_at(doc, now)
        .and_then(|p| doc.entry(&p.primary).map(|e| e.kek.clone()))
        .or_else(|| doc.keys.last().map(|e| e.kek.clone()))
        .ok_or(Error::NotReady)?;
    let entry = random_id("k_")?;
    let provider = registry.provider_for(&kek)?;
    let dk = provider
        .generate(
            &kek,
            WrapContext {
                keyset_id: &doc.id,
                entry_id: &entry,
            },
        )
        .await?;
    let new = KeyEntry {
        entry,
        kek,
        wrapped: dk.wrapped,
        created_at: now,
        activate_at: now,
        retire_at: None,
        seals_reserved: 0,
    };
    let next = rotated(doc, new, now, &config.timing, mode)?;
    store.compare_and_swap(Some(doc.generation), &next).await?;
    Ok(next)
}
