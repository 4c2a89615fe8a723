//! `stateseal revoke` as a library function: one compare-and-swap write that
//! adds a revocation entry to the authenticated document and drops the
//! entries that no longer cover anything. Only a KEK holder can tag the
//! result, and the fleet learns it with the conditional reads it already
//! makes: every instance refuses covered states within one refresh (R).

use super::newest::{judge_against_newest, newest_written, write_keyset};
use super::operations::{load_existing, load_verified, operator_generation};
use super::trust::{DEFAULT_KEYSET_VALIDITY, KeysetTrust, VerifiedKeyset};
use crate::clock::UnixTime;
use crate::error::{Error, KeysetError};
use crate::keyset::{
    KeysetStore, MAX_REVOCATIONS, document_time, is_representable, live_until, prunable,
};
use crate::provider::ProviderRegistry;
use crate::revocation::Revocation;

/// How often a revocation is applied again after losing a compare-and-swap
/// (to a seal reservation, a renewal, a rotation): adding an entry is always
/// safe to redo on the newer document.
const CONFLICT_RETRIES: usize = 4;

/// What [`revoke`] did.
#[derive(Debug, Clone)]
pub struct Revoked {
    /// The document in the store afterwards, verified.
    pub keyset: VerifiedKeyset,
    /// The entry, at the document's resolution.
    pub entry: Revocation,
    /// Whether this call wrote it (`false`: the document already held it).
    pub written: bool,
    /// Until when it stays in the document (see `keyset::live_until`).
    pub live_until: UnixTime,
}

/// Adds `entry` to the store's document at `now`, verified under `trust`
/// first and again after the write; entries nothing they cover can still be
/// valid are pruned in the same write.
///
/// # Errors
/// [`Error::Config`] for a `before` more than S ahead of `now` (it would
/// refuse states not issued yet) or more than T + S behind it (it would
/// cover nothing), an unrepresentable time, an unauthenticated
/// document, or a write that would leave more than [`MAX_REVOCATIONS`] live
/// entries (nothing is written); [`KeysetError::Refused`] for a document
/// `trust` refuses; [`KeysetError::BehindNewest`] on a restored backup;
/// [`KeysetError::Conflict`] when other writers kept landing first; store errors.
pub async fn revoke(
    store: &dyn KeysetStore,
    registry: &ProviderRegistry,
    trust: &KeysetTrust,
    entry: Revocation,
    now: UnixTime,
) -> Result<Revoked, Error> {
    let at = now;
    let now = at.as_secs_f64();
    let before = entry.before.as_secs_f64();
    if !is_representable(at) || !is_representable(entry.before) {
        return Err(Error::Config(
            "times must be Unix seconds between 1970 and 9999 (not milliseconds)".into(),
        ));
    }
    // The document keeps milliseconds. Rounded up, so "before now" covers a
    // state minted in the same millisecond, just before: rounded to nearest,
    // such a state could fall after the stored `before`.
    let entry = Revocation {
        before: UnixTime::from_secs_f64(document_time((before * 1000.0).ceil() / 1000.0))
            .ok_or_else(|| Error::Config("before is not a time".into()))?,
        ..entry
    };
    let mut retries = CONFLICT_RETRIES;
    loop {
        let base = load_verified(store, registry, trust, at).await?;
        let timing = base.doc.timing.unwrap_or_default();
        let before = entry.before.as_secs_f64();
        if before > now + timing.max_skew.as_secs_f64() {
            return Err(Error::Config(format!(
                "before is {:.0}s ahead of now, more than S ({}s): a revocation covers states already issued, not ones to come",
                before - now,
                timing.max_skew.as_secs_f64()
            )));
        }
        let mut next = base.doc.clone();
        next.revocations.retain(|r| !prunable(r, &timing, at));
        let until = live_until(&entry, &timing);
        if at >= until {
            return Err(Error::Config(format!(
                "before is {:.0}s ago, more than T + S ({}s): every state it would cover has expired already; nothing was written",
                now - before,
                timing.ttl.saturating_add(timing.max_skew).as_secs_f64()
            )));
        }
        if next.revocations.contains(&entry) {
            return Ok(Revoked {
                keyset: base,
                entry,
                written: false,
                live_until: until,
            });
        }
        if next.revocations.len() >= MAX_REVOCATIONS {
            return Err(Error::Config(format!(
                "the keyset already holds {} live revocations, the most it may hold ({MAX_REVOCATIONS}); nothing was written. Entries leave T + 2S after their `before`; revoke more broadly (a client id, or every state before a time) or rotate with --now-compromise",
                next.revocations.len()
            )));
        }
        next.revocations.push(entry.clone());
        next.generation = operator_generation(base.doc.generation, at);
        let newest = newest_written(store, registry, trust, &next.id).await;
        judge_against_newest(store, &base.doc, &mut next, newest.as_ref(), now)?;
        let sealed = base.seal_next(&next, at + DEFAULT_KEYSET_VALIDITY)?;
        match write_keyset(store, Some(base.doc.generation), &sealed).await {
            Ok(()) => {}
            Err(Error::Keyset(KeysetError::Conflict { .. })) if retries > 0 => {
                retries -= 1;
                continue;
            }
            Err(e) => return Err(e),
        }
        // The kind and times only: a principal (or its digest) is not the log's business.
        tracing::info!(store = %store.uri(), kind = entry.kind(), before = entry.before.as_secs_f64(), generation = next.generation, "revocation written");
        let keyset = trust
            .open(registry, store.uri(), &load_existing(store).await?, at)
            .await?;
        return Ok(Revoked {
            keyset,
            entry,
            written: true,
            live_until: until,
        });
    }
}
