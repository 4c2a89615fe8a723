//! The behaviour every [`KeyProvider`](stateseal::KeyProvider) must show, run
//! by each provider's own tests against a real (or contract-double) KMS:
//!
//! - generate gives a 32-byte key whose wrapped form does not carry it in the
//!   clear, and the key unwraps to itself;
//! - binding: a wrapped key unwraps only under the keyset id, entry id and
//!   purpose it was wrapped for; anything else is `Invalid`. The probe moves
//!   keys across keysets, entries, the `keyset-mac` purpose and the boundary
//!   between the two ids, and then forges a keyset document whose MAC key is
//!   a leaked data key: a provider that ignores the
//!   [`WrapContext`](stateseal::provider::WrapContext) fails here, because
//!   with it anyone who can write the store could re-key the keyset;
//! - in steady state, refreshes within `max_key_age` make no KMS call;
//! - a KMS outage is `Transient`: cached keys keep serving past `max_key_age`,
//!   and the unwrap is renewed once the KMS is back;
//! - credentials failing as a credential chain does (an expired or
//!   unrefreshed token, a metadata timeout) are `Transient` too;
//! - a revocation (key disabled, access withdrawn) is `Denied`, and the key is
//!   dropped once its cached unwrap passes `max_key_age`; access restored, it
//!   comes back.
//!
//! A case a provider cannot take part in (a local KEK has no network and no
//! access control) is not run, and the run prints why. The binding cases
//! always run.
//!
//! ```no_run
//! use stateseal::{LocalProvider, ProviderRegistry};
//! use stateseal_contract::provider::{self, ProviderUnderTest};
//!
//! struct Local(String);
//!
//! impl ProviderUnderTest for Local {
//!     fn registry(&self) -> ProviderRegistry {
//!         let mut registry = ProviderRegistry::with_defaults();
//!         registry.allow_local_kek();
//!         registry
//!     }
//!     fn kek(&self) -> String {
//!         self.0.clone()
//!     }
//!     fn outage(&self, _: bool) -> Result<(), &'static str> {
//!         Err("a local KEK needs no network")
//!     }
//!     fn credentials_failing(&self, _: bool) -> Result<(), &'static str> {
//!         Err("a local KEK has no credentials")
//!     }
//!     fn revoked(&self, _: bool) -> Result<(), &'static str> {
//!         Err("a local KEK file has no access control beyond its mode")
//!     }
//! }
//!
//! // In your tests: #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
//! async fn local_provider_meets_the_contract() {
//!     let dir = std::env::temp_dir().join("local-provider-contract");
//!     std::fs::create_dir_all(&dir).unwrap();
//!     LocalProvider::create_kek(&dir.join("kek.bin")).unwrap();
//!     let kek = format!("local://{}", dir.join("kek.bin").display());
//!     provider::run(&Local(kek), &dir).await;
//! }
//! ```

use crate::instant;
use std::path::Path;
use std::sync::Arc;

use stateseal::rotation::{Timing, init_keyset};
use stateseal::{DataError, Error, ErrorClass, FileStore, KeysetStore, ProviderRegistry};

use crate::binding::{class, ctx};
use crate::member::Member;

/// A provider under test, with the KMS-side powers the contract needs.
pub trait ProviderUnderTest: Send + Sync {
    /// A registry that knows the provider, configured for the KMS under test.
    fn registry(&self) -> ProviderRegistry;
    /// The KEK URI to wrap under.
    fn kek(&self) -> String;
    /// Makes the KMS unreachable (or answer "unavailable"), or says why it cannot be.
    fn outage(&self, on: bool) -> Result<(), &'static str>;
    /// Makes the registry's credentials fail as a credential chain does, or says why not.
    fn credentials_failing(&self, on: bool) -> Result<(), &'static str>;
    /// Revokes this registry's use of the KEK (or restores it), or says why it cannot.
    fn revoked(&self, on: bool) -> Result<(), &'static str>;
}

const T0: f64 = 1_782_345_600.0;
const MAX_KEY_AGE: f64 = 3600.0;

fn not_run(kek: &str, case: &str, why: &str) {
    println!("provider contract {kek}: {case} case not run: {why}");
}

/// Runs the whole contract, keeping file keysets in `dir` (an existing
/// directory of the caller's, holding no `keyset.json` yet).
///
/// # Panics
/// On the first rule the provider breaks, naming the case (`provider contract
/// <kek>: binding: keyset: …`).
pub async fn run(p: &impl ProviderUnderTest, dir: &Path) {
    let registry = p.registry();
    let kek = p.kek();
    let provider = registry.provider_for(&kek).expect("provider");

    // Wrapping binds the keyset, the entry and the purpose.
    crate::binding::probe(&registry, &kek, dir).await;
    let dk = provider
        .generate(&kek, ctx("ks_contract", "k_a"))
        .await
        .expect("generate");

    // A fleet member on a file keyset under this KEK.
    let store: Arc<dyn KeysetStore> = Arc::new(FileStore::new(dir.join("keyset.json")));
    let doc = init_keyset(
        store.as_ref(),
        &registry,
        &kek,
        Timing::default(),
        instant(T0),
    )
    .await
    .expect("init");
    let member = Member::new(&registry, store, crate::instant(T0));
    let (sched, works) = (&member.sched, |now: f64| member.works(crate::instant(now)));
    sched.refresh_at(instant(T0)).await.expect("first refresh");
    assert!(works(T0));

    // Steady state: no KMS call within max_key_age, whatever the traffic.
    let calls = sched.kms_calls();
    for i in 1..=20 {
        let now = T0 + f64::from(i) * 150.0;
        sched.refresh_at(instant(now)).await.expect("refresh");
        assert!(works(now));
    }
    assert_eq!(sched.kms_calls(), calls, "steady state made KMS calls");

    // Outage: transient; the cached key serves past max_key_age; renewed after.
    let mut last_unwrap = T0;
    match p.outage(true) {
        Ok(()) => {
            let during = T0 + MAX_KEY_AGE + 400.0;
            let _ = sched.refresh_at(instant(during)).await;
            let e = provider
                .unwrap(&kek, &doc.keys[0].wrapped, ctx(&doc.id, &doc.keys[0].entry))
                .await;
            p.outage(false).expect("recover");
            assert_eq!(
                class(e),
                Some(ErrorClass::Transient),
                "an outage is Transient"
            );
            assert!(sched.is_ready() && works(during), "the cached key serves");
            let before = sched.kms_calls();
            sched
                .refresh_at(instant(during + 30.0))
                .await
                .expect("recovered");
            assert!(sched.kms_calls() > before, "the stale unwrap was renewed");
            last_unwrap = during + 30.0;
        }
        Err(why) => not_run(&kek, "outage", why),
    }

    // Credentials failing as a chain does: transient, not a revocation.
    match p.credentials_failing(true) {
        Ok(()) => {
            let e = registry
                .provider_for(&kek)
                .expect("provider")
                .unwrap(&kek, &dk.wrapped, ctx("ks_contract", "k_a"))
                .await;
            p.credentials_failing(false).expect("restore credentials");
            assert_eq!(
                class(e),
                Some(ErrorClass::Transient),
                "a credential failure is Transient"
            );
        }
        Err(why) => not_run(&kek, "credentials", why),
    }

    // Revocation: denied; dropped after max_key_age; back once access returns.
    match p.revoked(true) {
        Ok(()) => {
            let e = provider
                .unwrap(&kek, &doc.keys[0].wrapped, ctx(&doc.id, &doc.keys[0].entry))
                .await;
            assert_eq!(class(e), Some(ErrorClass::Denied), "a revocation is Denied");
            let still = last_unwrap + MAX_KEY_AGE - 1.0;
            sched.refresh_at(instant(still)).await.expect("refresh");
            assert!(works(still), "the cached key serves until max_key_age");
            let after = last_unwrap + MAX_KEY_AGE + 1.0;
            assert!(matches!(
                sched.refresh_at(instant(after)).await,
                Err(Error::Data(DataError::KeysUnavailable(_)))
            ));
            assert!(!sched.is_ready() && !works(after), "dropped: fail closed");
            p.revoked(false).expect("restore access");
            sched
                .refresh_at(instant(after + 30.0))
                .await
                .expect("access restored");
            assert!(works(after + 30.0));
        }
        Err(why) => not_run(&kek, "revocation", why),
    }
}
