//! The providers the integrity suite runs on: the `local` provider counting
//! its calls, and a "KMS" whose wrap is the key itself (to re-wrap a key).

use std::sync::atomic::{AtomicU64, Ordering};

use stateseal::provider::{BoxFuture, DataKey, ErrorClass, KeyProvider, WrapContext};
use stateseal::{Error, LocalProvider, Secret};

/// The `local` provider, counting its calls: "zero KMS calls" is measured here.
#[derive(Debug, Default)]
pub struct CountingLocal {
    unwraps: AtomicU64,
    generates: AtomicU64,
    refuse_generate: bool,
}

impl CountingLocal {
    /// One whose generate calls are all refused as `Denied` (still counted),
    /// as AWS KMS refuses a role without `kms:GenerateDataKey`: a pod that
    /// can read keys but never make one.
    pub fn refusing_generate() -> Self {
        Self {
            refuse_generate: true,
            ..Self::default()
        }
    }

    /// Unwraps asked for so far.
    pub fn unwraps(&self) -> u64 {
        self.unwraps.load(Ordering::SeqCst)
    }

    /// Data keys generated so far.
    pub fn generates(&self) -> u64 {
        self.generates.load(Ordering::SeqCst)
    }
}

impl KeyProvider for CountingLocal {
    fn scheme(&self) -> &'static str {
        LocalProvider::SCHEME
    }
    fn generate<'a>(
        &'a self,
        kek: &'a str,
        ctx: WrapContext<'a>,
    ) -> BoxFuture<'a, Result<DataKey, Error>> {
        self.generates.fetch_add(1, Ordering::SeqCst);
        if self.refuse_generate {
            return Box::pin(async {
                Err(stateseal::provider::provider_failure(
                    LocalProvider::SCHEME,
                    ErrorClass::Denied,
                    "generate",
                    "AccessDeniedException: not authorized to perform GenerateDataKey",
                ))
            });
        }
        Box::pin(async move { LocalProvider::new().generate(kek, ctx).await })
    }
    fn unwrap<'a>(
        &'a self,
        kek: &'a str,
        wrapped: &'a [u8],
        ctx: WrapContext<'a>,
    ) -> BoxFuture<'a, Result<Secret, Error>> {
        self.unwraps.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move { LocalProvider::new().unwrap(kek, wrapped, ctx).await })
    }
}

/// A "KMS" whose wrapped form is the key itself (its first 32 bytes; anything
/// after is salt): lets a test re-wrap an existing key under a new KEK, wrap
/// one key two ways, or put the same key in two entries (no real provider
/// can wrap a given key through the `KeyProvider` interface). For tests only,
/// obviously.
#[derive(Debug)]
pub struct PlaintextWrap;

impl PlaintextWrap {
    /// Its scheme.
    pub const SCHEME: &'static str = "plaintext-test";
}

impl KeyProvider for PlaintextWrap {
    fn scheme(&self) -> &'static str {
        Self::SCHEME
    }
    fn generate<'a>(
        &'a self,
        _kek: &'a str,
        _ctx: WrapContext<'a>,
    ) -> BoxFuture<'a, Result<DataKey, Error>> {
        Box::pin(async {
            let plaintext = Secret::generate()?;
            let wrapped = plaintext.expose().to_vec();
            Ok(DataKey { plaintext, wrapped })
        })
    }
    fn unwrap<'a>(
        &'a self,
        _kek: &'a str,
        wrapped: &'a [u8],
        _ctx: WrapContext<'a>,
    ) -> BoxFuture<'a, Result<Secret, Error>> {
        Box::pin(async move {
            let key = wrapped.get(..32).ok_or_else(|| {
                stateseal::provider::kms_error(Self::SCHEME, ErrorClass::Invalid, "short")
            })?;
            Secret::new(key.to_vec())
        })
    }
}
