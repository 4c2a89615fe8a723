//! Proofs a keyset write needs before it happens: the live keys unwrap with
//! the KEKs at hand, and a new key's wrap gives the key back. Without them, a
//! wrong KEK file or a tampered document is only discovered by the fleet,
//! after the write.

use subtle::ConstantTimeEq;

use crate::error::{Error, KeysetError};
use crate::key::{KeyId, TokenFormat};
use crate::keyset::{KeyEntry, Keyset};
use crate::provider::{DataKey, KeyProvider, ProviderRegistry, WrapContext};
use crate::secret::Secret;

/// Unwraps one entry of `doc` and checks it against the key id the document
/// recorded (when it recorded one).
///
/// # Errors
/// The provider's error; [`KeysetError::Invalid`] when the key id differs.
pub async fn unwrap_entry(
    doc: &Keyset,
    entry: &KeyEntry,
    registry: &ProviderRegistry,
) -> Result<(Secret, KeyId), Error> {
    let provider = registry.provider_for(&entry.kek)?;
    let secret = provider
        .unwrap(
            &entry.kek,
            &entry.wrapped,
            WrapContext {
                keyset_id: &doc.id,
                entry_id: &entry.entry,
            },
        )
        .await?;
    let kid = KeyId::of_format(&secret, entry.alg);
    if let Some(recorded) = entry.kid
        && recorded != kid
    {
        return Err(Error::Keyset(KeysetError::Invalid {
            field: format!("entry {}", entry.entry),
            problem: format!(
                "unwraps to key id {kid}, but the document records {recorded}; the entry was altered"
            ),
        }));
    }
    Ok((secret, kid))
}

/// Unwraps every entry named in `live`; two entries with one key id are refused too.
pub(crate) async fn prove_live_keys(
    doc: &Keyset,
    registry: &ProviderRegistry,
    live: &[String],
) -> Result<(), Error> {
    let mut seen: Vec<(KeyId, &str)> = Vec::with_capacity(live.len());
    for id in live {
        let Some(entry) = doc.entry(id) else { continue };
        let (_, kid) = unwrap_entry(doc, entry, registry).await.map_err(|e| {
            Error::Keyset(KeysetError::RotationRefused(format!(
                "live key {} (entry {}) does not unwrap with {}: {e}",
                entry.kid.map_or_else(|| "?".into(), KeyId::to_hex),
                entry.entry,
                entry.kek
            )))
        })?;
        if let Some((_, other)) = seen.iter().find(|(k, _)| *k == kid) {
            return Err(Error::Keyset(KeysetError::RotationRefused(format!(
                "entries {other} and {} hold the same key {kid}",
                entry.entry
            ))));
        }
        seen.push((kid, &entry.entry));
    }
    Ok(())
}

/// Unwraps a freshly generated key and checks it is the key generated; its
/// key id as a key of `format`.
pub(crate) async fn prove_new_key(
    provider: &dyn KeyProvider,
    kek: &str,
    dk: &DataKey,
    ctx: WrapContext<'_>,
    format: TokenFormat,
) -> Result<KeyId, Error> {
    let back = provider.unwrap(kek, &dk.wrapped, ctx).await.map_err(|e| {
        Error::Keyset(KeysetError::RotationRefused(format!(
            "the new key's wrap under {kek} does not unwrap: {e}"
        )))
    })?;
    if !bool::from(back.expose().ct_eq(dk.plaintext.expose())) {
        return Err(Error::Keyset(KeysetError::RotationRefused(format!(
            "the new key's wrap under {kek} unwraps to another key"
        ))));
    }
    Ok(KeyId::of_format(&dk.plaintext, format))
}
