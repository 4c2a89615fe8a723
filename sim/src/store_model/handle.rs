//! One instance's (or the operator's) view of the store: each request meets
//! the service's limits and state at the instant it is made, and its answer
//! takes the store's latency on the virtual clock; a throttled request is
//! retried as the client does.

use std::sync::Arc;

use stateseal::keyset::{ConditionalLoad, StoreVersion, check_next_generation};
use stateseal::provider::BoxFuture;
use stateseal::{Error, KeysetError, KeysetStore, ProviderError, StoredKeyset};

use super::{DOC, NEWEST, State, StoreModel};

/// One attempt's answer: final, or one the client retries.
enum Attempt<T> {
    Done(Result<T, Error>),
    Retry(Error),
}

#[derive(Debug)]
pub(super) struct Handle {
    model: Arc<StoreModel>,
    instance: Option<usize>,
    object: usize,
    uri: String,
}

impl Handle {
    pub(super) fn new(model: Arc<StoreModel>, instance: Option<usize>, object: usize) -> Self {
        let uri = if object == DOC {
            "sim://keyset".to_owned()
        } else {
            "sim://keyset.newest".to_owned()
        };
        Self {
            model,
            instance,
            object,
            uri,
        }
    }

    fn unreachable(&self, st: &State) -> Option<Error> {
        let cut = st.outage || self.instance.is_some_and(|i| st.partitioned.contains(&i));
        cut.then(|| {
            Error::Provider(ProviderError::Store {
                uri: self.uri.clone(),
                problem: "unreachable (simulated outage or partition)".into(),
            })
        })
    }

    fn throttled(&self, what: &str) -> Error {
        Error::Provider(ProviderError::Store {
            uri: self.uri.clone(),
            problem: format!("503 SlowDown / 429 Too Many Requests ({what})"),
        })
    }

    /// Runs `attempt` now (the request reaches the store at once) and
    /// returns its answer after the store's latency, retrying as the client does.
    async fn requests<T>(&self, mut attempt: impl FnMut() -> Attempt<T>) -> Result<T, Error> {
        let model = &self.model;
        let policy = model.profile.retry;
        let mut last = 0.0;
        let mut retries = 0;
        loop {
            let answer = attempt();
            model.clock.sleep(model.profile.latency).await;
            match answer {
                Attempt::Done(r) => return r,
                Attempt::Retry(e) => {
                    retries += 1;
                    if retries >= policy.attempts() {
                        return Err(e);
                    }
                    let unit = model.lock().rng.unit();
                    last = policy.wait(retries, last, unit);
                    model.clock.sleep(last).await;
                }
            }
        }
    }

    fn read(&self, seen: Option<&StoreVersion>) -> Attempt<ConditionalLoad> {
        let t = self.model.clock.now();
        let mut st = self.model.lock();
        if let Some(e) = self.unreachable(&st) {
            return Attempt::Retry(e);
        }
        if !st.replaying && !st.reads.take(t) {
            st.counts.throttled_reads += 1;
            return Attempt::Retry(self.throttled("the prefix's read rate"));
        }
        let object = &st.objects[self.object];
        let version = StoreVersion::new(object.version.to_string());
        let unchanged = object.doc.is_some() && seen == Some(&version);
        let result = if unchanged {
            ConditionalLoad::Unchanged
        } else {
            ConditionalLoad::Current {
                document: object.doc.clone(),
                version: object.doc.as_ref().map(|_| version),
            }
        };
        if !st.replaying
            && self.object == DOC
            && let Some(i) = self.instance
        {
            let v = st.objects[DOC].version;
            st.served.insert(i, v);
        }
        if !st.replaying {
            if self.object == NEWEST {
                st.counts.copy_reads += 1;
            } else if unchanged {
                st.counts.unchanged_reads.add(t);
            } else {
                st.counts.full_reads.add(t);
            }
        }
        Attempt::Done(Ok(result))
    }

    fn write(&self, expected: Option<u64>, doc: &StoredKeyset) -> Attempt<()> {
        let t = self.model.clock.now();
        let mut st = self.model.lock();
        if let Some(e) = self.unreachable(&st) {
            return Attempt::Retry(e);
        }
        // Every real store's compare-and-swap reads the object first (its
        // generation and ETag or KV version), then writes on that condition.
        if self.object == DOC {
            st.counts.full_reads.add(t);
        } else {
            st.counts.copy_reads += 1;
        }
        let object = &mut st.objects[self.object];
        let found = object.doc.as_ref().map(StoredKeyset::generation);
        if found != expected {
            if self.object == DOC {
                st.counts.refused_writes += 1;
            }
            return Attempt::Done(Err(Error::Keyset(KeysetError::Conflict {
                expected,
                found,
            })));
        }
        if !object.bucket.take(t) {
            if self.object == DOC {
                st.counts.throttled_writes += 1;
            }
            return Attempt::Retry(self.throttled("the object's write rate"));
        }
        object.doc = Some(doc.clone());
        object.version += 1;
        object.written_at = t;
        if self.object == DOC {
            st.counts.writes.add(t);
        } else {
            st.counts.copy_writes += 1;
        }
        Attempt::Done(Ok(()))
    }
}

impl KeysetStore for Handle {
    fn uri(&self) -> &str {
        &self.uri
    }

    fn load(&self) -> BoxFuture<'_, Result<Option<StoredKeyset>, Error>> {
        Box::pin(async move {
            self.requests(|| self.read(None)).await.map(|r| match r {
                ConditionalLoad::Current { document, .. } => document,
                _ => None,
            })
        })
    }

    fn load_if_changed<'a>(
        &'a self,
        seen: Option<&'a StoreVersion>,
    ) -> BoxFuture<'a, Result<ConditionalLoad, Error>> {
        Box::pin(async move { self.requests(|| self.read(seen)).await })
    }

    fn compare_and_swap<'a>(
        &'a self,
        expected: Option<u64>,
        doc: &'a StoredKeyset,
    ) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            check_next_generation(&self.uri, expected, doc)?;
            self.requests(|| self.write(expected, doc)).await
        })
    }

    fn newest_copy(&self) -> Option<Box<dyn KeysetStore>> {
        Some(Box::new(Self::new(
            Arc::clone(&self.model),
            self.instance,
            NEWEST,
        )))
    }
}
