//! The KMS as the simulation sees it: a provider (`sim-kms://`) with a
//! request quota and latency, counting every call by simulated second. Its
//! "wrapped" key is the key itself behind a digest of the wrap context: a
//! model of the contract (context binding, generate, unwrap), never a cipher.

use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};
use stateseal::provider::{BoxFuture, DataKey, ErrorClass, KeyProvider, WrapContext, kms_error};
use stateseal::{Error, Secret};

use crate::series::{Clock, Series};

/// The model's scheme: KEKs are `sim-kms://…`.
pub(crate) const SCHEME: &str = "sim-kms";

/// A KMS's request quota (shared by the whole fleet) and its latency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KmsProfile {
    /// Requests allowed per `window` seconds.
    pub quota: u64,
    /// The quota's window: 1 s (AWS), 60 s (GCP).
    pub window: f64,
    /// Seconds one request takes.
    pub latency: f64,
}

#[derive(Debug)]
struct State {
    window_index: i64,
    in_window: u64,
    calls: Series,
    throttled: u64,
    keys: u64,
    generates: u64,
    /// Unwraps per wrap context (one entry of one keyset, or its MAC key).
    unwraps: std::collections::HashMap<[u8; 16], u64>,
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
    /// The busiest quota window's count.
    pub(crate) peak_window: u64,
}

fn binding(ctx: &WrapContext<'_>) -> [u8; 16] {
    let d = Sha256::digest(ctx.associated_data());
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    b
}

impl KmsModel {
    pub(crate) fn new(profile: KmsProfile, clock: Clock) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                window_index: i64::MIN,
                in_window: 0,
                calls: Series::default(),
                throttled: 0,
                keys: 0,
                generates: 0,
                unwraps: std::collections::HashMap::new(),
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

    /// One request at the current time, or a throttling error past the quota.
    fn admit(&self) -> Result<u64, Error> {
        let t = self.clock.now();
        let mut st = self.lock();
        let w = (t / self.profile.window).floor() as i64;
        if w != st.window_index {
            st.window_index = w;
            st.in_window = 0;
        }
        if st.in_window >= self.profile.quota {
            st.throttled += 1;
            return Err(kms_error(
                SCHEME,
                ErrorClass::Transient,
                "ThrottlingException: rate exceeded (simulated quota)",
            ));
        }
        st.in_window += 1;
        st.calls.add(t);
        st.keys += 1;
        Ok(st.keys)
    }

    /// Forgets what the operator's setup cost (before the run's second 0).
    pub(crate) fn reset_counts(&self) {
        let mut st = self.lock();
        st.calls = Series::default();
        st.throttled = 0;
        st.generates = 0;
        st.unwraps.clear();
        st.window_index = i64::MIN;
        st.in_window = 0;
    }

    /// Requests admitted so far.
    pub(crate) fn total(&self) -> u64 {
        self.lock().calls.total()
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
        let window = self.profile.window.max(1.0) as usize;
        let mut peak = 0u64;
        let total = st.calls.total();
        // Busiest aligned window: the quota's own accounting.
        let mut start = 0usize;
        let mut seen = 0u64;
        while seen < total {
            let n = st.calls.between(start as f64, (start + window) as f64);
            peak = peak.max(n);
            seen += n;
            start += window;
        }
        KmsCounts {
            calls: st.calls.clone(),
            throttled: st.throttled,
            peak_window: peak,
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
        let result = self.admit().and_then(|n| {
            self.lock().generates += 1;
            // Distinct keys, from the model's own counter (no randomness needed).
            let key = Sha256::digest(n.to_be_bytes()).to_vec();
            let mut wrapped = binding(&ctx).to_vec();
            wrapped.extend_from_slice(&key);
            Ok(DataKey {
                plaintext: Secret::new(key)?,
                wrapped,
            })
        });
        Box::pin(async move { result })
    }

    fn unwrap<'a>(
        &'a self,
        _kek: &'a str,
        wrapped: &'a [u8],
        ctx: WrapContext<'a>,
    ) -> BoxFuture<'a, Result<Secret, Error>> {
        let result = self.admit().and_then(|_| {
            let bound = binding(&ctx);
            *self.lock().unwraps.entry(bound).or_insert(0) += 1;
            if wrapped.len() != 48 || wrapped[..16] != bound {
                return Err(kms_error(
                    SCHEME,
                    ErrorClass::Invalid,
                    "the wrapped key is bound to another context",
                ));
            }
            Secret::new(wrapped[16..].to_vec())
        });
        Box::pin(async move { result })
    }
}
