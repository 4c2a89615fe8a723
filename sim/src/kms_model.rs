//! The KMS as the simulation sees it: a provider (`sim-kms://`) with a
//! request quota enforced per second (as AWS KMS and Cloud KMS enforce
//! theirs), latency per request, the client's retries of a throttled call,
//! and rotators whose role lacks generate-data-key. It counts every call by
//! simulated second. Its "wrapped" key is the key itself behind a digest of
//! the wrap context: a model of the contract (context binding, generate,
//! unwrap), never a cipher.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};
use stateseal::provider::{BoxFuture, DataKey, ErrorClass, KeyProvider, WrapContext, kms_error};
use stateseal::{Error, Secret};

use crate::retry::RetryPolicy;
use crate::rng::Rng;
use crate::series::Series;
use crate::virtual_time::{Actor, Clock, OPERATOR};

/// The model's scheme: KEKs are `sim-kms://…`.
pub(crate) const SCHEME: &str = "sim-kms";

/// A KMS's request quota (shared by the whole fleet), its latency and its client's retries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KmsProfile {
    /// Cryptographic requests allowed in each second (the fleet's share of
    /// the account's or project's quota).
    pub quota_per_s: u64,
    /// Seconds one request takes.
    pub latency: f64,
    /// How the KMS client retries a throttled request.
    pub retry: RetryPolicy,
}

#[derive(Debug)]
struct State {
    second: i64,
    in_second: u64,
    calls: Series,
    throttled: u64,
    denied: u64,
    keys: u64,
    generates: u64,
    /// Unwraps per wrap context (one entry of one keyset, or its MAC key).
    unwraps: HashMap<[u8; 16], u64>,
    /// How many actors may fail generate-data-key, and those that did.
    failing_quota: usize,
    failing: HashSet<Actor>,
    rng: Rng,
}

#[derive(Debug)]
pub(crate) struct KmsModel {
    state: Mutex<State>,
    profile: KmsProfile,
    clock: Clock,
}

/// What the KMS did over the run.
#[derive(Debug, Clone)]
pub(crate) struct KmsCounts {
    pub(crate) calls: Series,
    pub(crate) throttled: u64,
    pub(crate) denied: u64,
}

fn binding(ctx: &WrapContext<'_>) -> [u8; 16] {
    let d = Sha256::digest(ctx.associated_data());
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    b
}

/// One attempt's answer: final, or a throttle the client may retry.
enum Attempt<T> {
    Done(Result<T, Error>),
    Throttled(Error),
}

impl KmsModel {
    /// `failing_rotators`: the first this many actors (never the operator)
    /// that call generate-data-key are denied it, then and ever after — the
    /// worst case, where each is the fleet's next claimant.
    pub(crate) fn new(
        profile: KmsProfile,
        clock: Clock,
        seed: u64,
        failing_rotators: usize,
    ) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                second: i64::MIN,
                in_second: 0,
                calls: Series::default(),
                throttled: 0,
                denied: 0,
                keys: 0,
                generates: 0,
                unwraps: HashMap::new(),
                failing_quota: failing_rotators,
                failing: HashSet::new(),
                rng: Rng::new(seed),
            }),
            profile,
            clock,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn profile(&self) -> KmsProfile {
        self.profile
    }

    /// One request arriving now: admitted (a fresh key number) or throttled.
    fn admit(&self) -> Attempt<u64> {
        let t = self.clock.now();
        let mut st = self.lock();
        let s = t.floor() as i64;
        if s != st.second {
            st.second = s;
            st.in_second = 0;
        }
        if st.in_second >= self.profile.quota_per_s {
            st.throttled += 1;
            return Attempt::Throttled(kms_error(
                SCHEME,
                ErrorClass::Transient,
                "ThrottlingException / RESOURCE_EXHAUSTED: the per-second quota (simulated)",
            ));
        }
        st.in_second += 1;
        st.calls.add(t);
        st.keys += 1;
        Attempt::Done(Ok(st.keys))
    }

    /// A request counted now, answered after the KMS's latency, retried as
    /// the client retries a throttle.
    async fn request<T>(&self, mut then: impl FnMut(u64) -> Result<T, Error>) -> Result<T, Error> {
        let policy = self.profile.retry;
        let (mut last, mut retries) = (0.0, 0);
        loop {
            let answer = self.admit();
            self.clock.sleep(self.profile.latency).await;
            match answer {
                Attempt::Done(n) => return n.and_then(&mut then),
                Attempt::Throttled(e) => {
                    retries += 1;
                    if retries >= policy.attempts() {
                        return Err(e);
                    }
                    let unit = self.lock().rng.unit();
                    last = policy.wait(retries, last, unit);
                    self.clock.sleep(last).await;
                }
            }
        }
    }

    /// Whether the running actor's generate-data-key is denied.
    fn denies_generate(&self) -> bool {
        let actor = self.clock.actor();
        let mut st = self.lock();
        if actor == OPERATOR {
            return false;
        }
        if !st.failing.contains(&actor) && st.failing.len() < st.failing_quota {
            st.failing.insert(actor);
        }
        let denied = st.failing.contains(&actor);
        st.denied += u64::from(denied);
        denied
    }

    /// Forgets what the operator's setup cost (before the run's second 0).
    pub(crate) fn reset_counts(&self) {
        let mut st = self.lock();
        st.calls = Series::default();
        st.throttled = 0;
        st.denied = 0;
        st.generates = 0;
        st.unwraps.clear();
        st.second = i64::MIN;
        st.in_second = 0;
    }

    /// Data keys generated so far.
    pub(crate) fn generates(&self) -> u64 {
        self.lock().generates
    }

    /// Unwraps admitted so far of entry `entry` of keyset `keyset`.
    pub(crate) fn unwraps_of(&self, keyset: &str, entry: &str) -> u64 {
        let ctx = WrapContext {
            keyset_id: keyset,
            entry_id: entry,
        };
        self.lock()
            .unwraps
            .get(&binding(&ctx))
            .copied()
            .unwrap_or(0)
    }

    pub(crate) fn counts(&self) -> KmsCounts {
        let st = self.lock();
        KmsCounts {
            calls: st.calls.clone(),
            throttled: st.throttled,
            denied: st.denied,
        }
    }
}

impl KeyProvider for KmsModel {
    fn scheme(&self) -> &'static str {
        SCHEME
    }

    fn generate<'a>(
        &'a self,
        _kek: &'a str,
        ctx: WrapContext<'a>,
    ) -> BoxFuture<'a, Result<DataKey, Error>> {
        Box::pin(async move {
            if self.denies_generate() {
                // IAM refuses before any quota is spent; the clients never retry a denial.
                self.clock.sleep(self.profile.latency).await;
                return Err(kms_error(
                    SCHEME,
                    ErrorClass::Denied,
                    "AccessDeniedException: not authorized to generate data keys (simulated failing rotator)",
                ));
            }
            let bound = binding(&ctx);
            self.request(|n| {
                self.lock().generates += 1;
                // Distinct keys, from the model's own counter (no randomness needed).
                let key = Sha256::digest(n.to_be_bytes()).to_vec();
                let mut wrapped = bound.to_vec();
                wrapped.extend_from_slice(&key);
                Ok(DataKey {
                    plaintext: Secret::new(key)?,
                    wrapped,
                })
            })
            .await
        })
    }

    fn unwrap<'a>(
        &'a self,
        _kek: &'a str,
        wrapped: &'a [u8],
        ctx: WrapContext<'a>,
    ) -> BoxFuture<'a, Result<Secret, Error>> {
        let bound = binding(&ctx);
        Box::pin(async move {
            self.request(|_| {
                *self.lock().unwraps.entry(bound).or_insert(0) += 1;
                if wrapped.len() != 48 || wrapped[..16] != bound {
                    return Err(kms_error(
                        SCHEME,
                        ErrorClass::Invalid,
                        "the wrapped key is bound to another context",
                    ));
                }
                Secret::new(wrapped[16..].to_vec())
            })
            .await
        })
    }
}
