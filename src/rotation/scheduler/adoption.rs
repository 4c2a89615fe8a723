//! Reading the store and adopting what it holds: a conditional read, the
//! trust checks, admission against the document adopted last, re-wrap proofs.

use super::{RotationScheduler, lock};
use crate::clock::UnixTime;
use crate::error::KeysetRefusal;
use crate::error::{DataError, Error, KeysetError, ProviderError};
use crate::keyset::{ConditionalLoad, Keyset, StoreVersion, StoredKeyset};
use crate::rotation::admission::admit;
use crate::rotation::newest::{Behind, behind_newest};
use crate::rotation::trust::{KeysetTrust, VerifiedKeyset};

/// How long a refusal that a KMS answer decided stands before the same document
/// is judged again: a junk document costs each instance one KMS call per this
/// long at most, and a KMS error misclassified as a refusal lasts no longer.
pub(crate) const REJUDGE_AFTER: f64 = 300.0;

impl RotationScheduler {
    /// Reads the store and swaps in the ring for `now`; returns the document
    /// adopted by this refresh.
    pub(super) async fn refresh_inner(&self, now: f64) -> Result<Keyset, Error> {
        let inner = &self.inner;
        let _guard = inner.refresh_lock.lock().await;
        let uri = inner.store.uri();
        let candidate = match self.read_store(now).await {
            Ok(read) => read,
            Err(Error::Keyset(KeysetError::Invalid { field, problem })) => {
                Err(KeysetRefusal::Invalid.record(uri, format!("{field}: {problem}")))
            }
            Err(e) => Err(e),
        };
        let problem = match candidate {
            Ok((verified, version)) => match self.install(&verified.doc, now, true).await {
                Err(Error::Data(DataError::DuplicateKey { index })) => KeysetRefusal::DuplicateKey.record(
                    uri,
                    format!(
                        "generation {}: the key of its entry {index} duplicates another entry's",
                        verified.doc.generation
                    ),
                ),
                result => {
                    self.adopt(&verified);
                    // An unauthenticated document is read in full every time, so
                    // that every refresh warns about it (the migration's reminder).
                    *lock(&inner.seen) = version.filter(|_| verified.is_authenticated());
                    lock(&inner.status).last_store_read = UnixTime::from_secs_f64(now);
                    result?;
                    self.write_if_due(&verified, now).await;
                    return Ok(verified.doc);
                }
            },
            Err(e) => e,
        };
        // The store gave nothing usable: the last adopted document still says what the ring is now.
        let Some(adopted) = lock(&inner.adopted).as_ref().map(|v| v.doc.clone()) else {
            return Err(problem);
        };
        let since = lock(&inner.status)
            .last_store_read
            .map_or(now, UnixTime::as_secs_f64);
        let limit = inner
            .config
            .store_staleness_limit(&adopted.timing.unwrap_or(inner.config.timing))
            .as_secs_f64();
        let sealing = now - since <= limit;
        // KeysUnavailable here is already in effect (ring cleared); the store problem is the news.
        let _ = self.install(&adopted, now, sealing).await;
        if !sealing {
            return Err(Error::Provider(ProviderError::Store {
                uri: uri.to_owned(),
                problem: format!(
                    "no usable keyset document for {:.0}s, longer than max_store_staleness ({limit}s); not sealing until the store recovers, states already sealed still verify (last problem: {problem})",
                    now - since
                ),
            }));
        }
        Err(problem)
    }

    /// One conditional read of the store: the document to adopt and its
    /// version. An unchanged document is the one adopted last, which only
    /// has to be still fresh; a changed one goes through [`Self::accept`].
    /// The outer error is the store's; the inner one a refusal.
    async fn read_store(
        &self,
        now: f64,
    ) -> Result<Result<(VerifiedKeyset, Option<StoreVersion>), Error>, Error> {
        let inner = &self.inner;
        let uri = inner.store.uri();
        let refused = lock(&inner.refused)
            .clone()
            .filter(|(.., until)| now < *until);
        let seen = lock(&inner.seen).clone();
        // The store moves on from the document it refused last, or from the one it adopted.
        let asked = refused.as_ref().map(|(v, ..)| v.clone()).or(seen.clone());
        let read = inner.store.load_if_changed(asked.as_ref()).await;
        let result = match &read {
            Ok(ConditionalLoad::Unchanged) => "unchanged",
            Ok(_) => "changed",
            Err(_) => "failed",
        };
        metrics::counter!("stateseal_keyset_reads_total", "result" => result).increment(1);
        Ok(match read? {
            ConditionalLoad::Unchanged => match (refused, lock(&inner.adopted).clone()) {
                // Still the document refused last: refused again without opening it.
                (Some((_, reason, detail, _)), _) => {
                    metrics::counter!("stateseal_keyset_rejected_total", "reason" => reason.label())
                        .increment(1);
                    Err(Error::Keyset(KeysetError::Refused { reason, detail }))
                }
                (None, Some(adopted)) => {
                    KeysetTrust::check_fresh(uri, &adopted, UnixTime::from_finite_secs(now))
                        .map(|()| (adopted, seen))
                }
                (None, None) => {
                    // Only an adopted document has a version to name: a store answering
                    // "unchanged" without one is wrong, and the next read is a full one.
                    *lock(&inner.seen) = None;
                    return Err(Error::Provider(ProviderError::Store {
                        uri: uri.to_owned(),
                        problem: "answered \"unchanged\" to a read that named no version".into(),
                    }));
                }
            },
            ConditionalLoad::Current {
                document: Some(stored),
                version,
            } => {
                let accepted = self.accept(&stored, now).await;
                // Remember a refusal of the document itself (never a KMS or store
                // outage's): for good when the bytes alone decide it; for a while when
                // a KMS answer did (the MAC key's unwrap, a re-wrap's proof), so that a
                // misclassified KMS error never lasts; not at all when the clock did
                // (expiry, entries judged while live): judging that again costs no KMS
                // call, and an emergency rotation read early is adopted at the next refresh.
                let until = match &accepted {
                    Err(Error::Keyset(KeysetError::Refused { reason, .. }))
                        if reason.is_permanent() =>
                    {
                        Some(f64::INFINITY)
                    }
                    Err(Error::Keyset(KeysetError::Refused { reason, .. }))
                        if [KeysetRefusal::Mac, KeysetRefusal::KeyChanged].contains(reason) =>
                    {
                        Some(now + REJUDGE_AFTER)
                    }
                    _ => None,
                };
                *lock(&inner.refused) = match (&accepted, &version, until) {
                    (
                        Err(Error::Keyset(KeysetError::Refused { reason, detail })),
                        Some(v),
                        Some(until),
                    ) => Some((v.clone(), *reason, detail.clone(), until)),
                    _ => None,
                };
                accepted.map(|v| (v, version))
            }
            ConditionalLoad::Current { document: None, .. } => {
                return Err(Error::Provider(ProviderError::Store {
                    uri: uri.to_owned(),
                    problem: "no keyset document; create one with `stateseal init`".into(),
                }));
            }
        })
    }

    /// The stored document, verified (`trust`), admitted against the one
    /// adopted last, with its re-wraps proven: what this instance may adopt.
    async fn accept(&self, stored: &StoredKeyset, now: f64) -> Result<VerifiedKeyset, Error> {
        let inner = &self.inner;
        let verified = inner
            .trust
            .open(
                &inner.registry,
                inner.store.uri(),
                stored,
                UnixTime::from_finite_secs(now),
            )
            .await?;
        let adopted = self.adopted_doc();
        if adopted.is_none() {
            self.floor_at_first_adoption(&verified.doc).await?;
        }
        self.vet_against(adopted.as_ref(), &verified.doc, now)?;
        if let Some(adopted) = &adopted {
            self.check_rewraps(adopted, &verified.doc).await?;
        }
        Ok(verified)
    }

    /// An instance with no watermark (just started) takes the store's newest
    /// copy as one: a document below the copy's generation is a restored
    /// backup, which running instances refuse as a rollback, and adopting it
    /// would bring back what was revoked or retired since. Refused until the
    /// document changes. A copy that is missing or does not verify leaves
    /// `min_generation` and `expires_at` as the floor (see `newest_written`);
    /// a copy that moved on with the document (a write landed between the
    /// two reads) is a lost race, and the next refresh reads the new one.
    async fn floor_at_first_adoption(&self, doc: &Keyset) -> Result<(), Error> {
        let inner = &self.inner;
        let store = &*inner.store;
        match behind_newest(store, &inner.registry, &inner.trust, doc).await {
            Ok(None) | Err(Error::Keyset(KeysetError::Conflict { .. })) => Ok(()),
            Ok(Some(Behind { newest, copy })) => Err(KeysetRefusal::BehindNewest.record(
                store.uri(),
                format!(
                    "the store holds generation {}, but generation {newest} was written before it (its copy is {copy}): a restored backup, not adopted by an instance that has none yet. Put the newest document back (copy {copy} over {}), or retire every key in the backup with `stateseal rotate --now-compromise`",
                    doc.generation,
                    store.uri()
                ),
            )),
            Err(e) => Err(e),
        }
    }

    /// A copy of the document adopted last (released before any await).
    fn adopted_doc(&self) -> Option<Keyset> {
        lock(&self.inner.adopted).as_ref().map(|v| v.doc.clone())
    }

    /// Admission of `doc` against the document adopted last (see `admission`).
    pub(super) fn vet(&self, doc: &Keyset, now: f64) -> Result<(), Error> {
        self.vet_against(self.adopted_doc().as_ref(), doc, now)
    }

    fn vet_against(&self, adopted: Option<&Keyset>, doc: &Keyset, now: f64) -> Result<(), Error> {
        let inner = &self.inner;
        let pruned = lock(&inner.pruned).clone();
        admit(adopted, doc, &inner.config.timing, now, &pruned)
            .map_err(|(refusal, detail)| refusal.record(inner.store.uri(), detail))
    }

    /// An entry re-wrapped since the adopted document (new KEK or wrapped
    /// bytes) is admitted only if it unwraps to the key id it records (which
    /// admission already holds to the adopted one): one KMS call per re-wrap.
    async fn check_rewraps(&self, adopted: &Keyset, doc: &Keyset) -> Result<(), Error> {
        let inner = &self.inner;
        for e in &doc.keys {
            let Some(before) = adopted.entry(&e.entry) else {
                continue;
            };
            if before.kek == e.kek && before.wrapped == e.wrapped {
                continue;
            }
            match crate::rotation::proof::unwrap_entry(doc, e, &inner.registry).await {
                Ok(_) => {}
                Err(Error::Keyset(KeysetError::Invalid { problem, .. })) => {
                    return Err(KeysetRefusal::KeyChanged.record(
                        inner.store.uri(),
                        format!(
                            "generation {}: entry {} was re-wrapped to another key: {problem}",
                            doc.generation, e.entry
                        ),
                    ));
                }
                // The KMS could not say (an outage): not adopted now, tried again at the next refresh.
                Err(other) => return Err(other),
            }
        }
        Ok(())
    }

    /// Makes `verified` the watermark; entries it dropped are remembered as pruned.
    fn adopt(&self, verified: &VerifiedKeyset) {
        let inner = &self.inner;
        let mut adopted = lock(&inner.adopted);
        if let Some(previous) = adopted.as_ref() {
            let mut pruned = lock(&inner.pruned);
            for e in &previous.doc.keys {
                if verified.doc.entry(&e.entry).is_none() {
                    pruned.insert(e.entry.clone());
                }
            }
        }
        *adopted = Some(verified.clone());
        let unauthenticated = !verified.is_authenticated();
        metrics::gauge!("stateseal_keyset_unauthenticated")
            .set(f64::from(u8::from(unauthenticated)));
        if let Some(at) = verified.expires_at {
            metrics::gauge!("stateseal_keyset_expires_at_seconds").set(at.as_secs_f64());
        }
        let mut st = lock(&inner.status);
        st.unauthenticated = unauthenticated;
        st.expires_at = verified.expires_at;
    }
}
