//! The toy provider and store under the published contract suites, as an
//! outside project runs them; and two providers that get the wrap binding
//! wrong, each failing the suite on the case that names its mistake.

use std::path::PathBuf;
use std::sync::Arc;

use outside_provider::{Bucket, BucketStore, Hsm, HsmProvider};
use stateseal::provider::{BoxFuture, DataKey, KeyProvider, WrapContext, kms_error};
use stateseal::{Error, ErrorClass, KeysetStore, ProviderRegistry, Secret};
use stateseal_contract::provider::{self, ProviderUnderTest};
use stateseal_contract::store::{self, StoreUnderTest};

/// A fresh directory for one test's scratch keysets.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("outside-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// The toy HSM with one key, and the provider the registry gets for it.
struct ToyKms {
    hsm: Arc<Hsm>,
    provider: fn(Arc<Hsm>) -> Arc<dyn KeyProvider>,
}

const KEY: &str = "fleet";

impl ToyKms {
    fn new(provider: fn(Arc<Hsm>) -> Arc<dyn KeyProvider>) -> Self {
        let hsm = Arc::new(Hsm::new());
        hsm.create_key(KEY);
        Self { hsm, provider }
    }
}

impl ProviderUnderTest for ToyKms {
    fn registry(&self) -> ProviderRegistry {
        let mut registry = ProviderRegistry::with_defaults();
        registry.register_provider((self.provider)(self.hsm.clone()));
        registry
    }
    fn kek(&self) -> String {
        format!("toy-hsm://{KEY}")
    }
    fn outage(&self, on: bool) -> Result<(), &'static str> {
        self.hsm.set_available(!on);
        Ok(())
    }
    fn credentials_failing(&self, on: bool) -> Result<(), &'static str> {
        self.hsm.set_token_valid(!on);
        Ok(())
    }
    fn revoked(&self, on: bool) -> Result<(), &'static str> {
        self.hsm.set_enabled(KEY, !on);
        Ok(())
    }
}

fn bound(hsm: Arc<Hsm>) -> Arc<dyn KeyProvider> {
    Arc::new(HsmProvider::new(hsm))
}

fn unbound(hsm: Arc<Hsm>) -> Arc<dyn KeyProvider> {
    Arc::new(HsmProvider::without_binding(hsm))
}

fn run_together(hsm: Arc<Hsm>) -> Arc<dyn KeyProvider> {
    Arc::new(RunTogether(hsm))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_toy_provider_meets_the_provider_contract() {
    let dir = scratch("provider");
    provider::run(&ToyKms::new(bound), &dir).await;
    let _ = std::fs::remove_dir_all(dir);
}

/// Runs the provider suite on `provider` (on its own task, in a scratch
/// directory `name`) and asserts that it fails on `case`.
async fn fails_on(name: &str, provider: fn(Arc<Hsm>) -> Arc<dyn KeyProvider>, case: &str) {
    let dir = scratch(name);
    let (kms, scratch_dir) = (ToyKms::new(provider), dir.clone());
    let outcome = tokio::spawn(async move { provider::run(&kms, &scratch_dir).await }).await;
    let _ = std::fs::remove_dir_all(dir);
    let panic = outcome
        .expect_err("the provider contract passed a provider that does not bind its wraps")
        .into_panic();
    let message = panic.downcast_ref::<String>().expect("a panic message");
    let want = format!("provider contract toy-hsm://fleet: binding: {case}:");
    assert!(message.contains(&want), "expected {want:?}, got {message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_that_ignores_the_context_fails_on_the_forged_mac_key() {
    fails_on("unbound", unbound, "forged MAC key").await;
}

/// Binds the two ids run together, with no separator: ("ks_ab", "k_c") and
/// ("ks_a", "bk_c") are then one context.
#[derive(Debug)]
struct RunTogether(Arc<Hsm>);

impl KeyProvider for RunTogether {
    fn scheme(&self) -> &'static str {
        HsmProvider::SCHEME
    }
    fn generate<'a>(
        &'a self,
        _kek: &'a str,
        ctx: WrapContext<'a>,
    ) -> BoxFuture<'a, Result<DataKey, Error>> {
        Box::pin(async move {
            let plaintext = Secret::generate()?;
            let aad = format!("{}{}", ctx.keyset_id, ctx.entry_id);
            let wrapped = self
                .0
                .encrypt(KEY, plaintext.expose(), aad.as_bytes())
                .map_err(|e| kms_error("toy-hsm", ErrorClass::Transient, e.to_string()))?;
            Ok(DataKey { plaintext, wrapped })
        })
    }
    fn unwrap<'a>(
        &'a self,
        _kek: &'a str,
        wrapped: &'a [u8],
        ctx: WrapContext<'a>,
    ) -> BoxFuture<'a, Result<Secret, Error>> {
        Box::pin(async move {
            let aad = format!("{}{}", ctx.keyset_id, ctx.entry_id);
            let plaintext = self
                .0
                .decrypt(KEY, wrapped, aad.as_bytes())
                .map_err(|e| kms_error("toy-hsm", ErrorClass::Invalid, e.to_string()))?;
            Secret::from_slice(&plaintext)
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_that_runs_the_ids_together_fails_on_the_separator() {
    fails_on("run-together", run_together, "separator").await;
}

/// The toy bucket, one object of it under test.
struct ToyStore {
    bucket: Arc<Bucket>,
}

const OBJECT: &str = "keysets/contract.json";

impl StoreUnderTest for ToyStore {
    fn open(&self) -> Arc<dyn KeysetStore> {
        let uri = format!("toy-mem://{OBJECT}");
        Arc::new(BucketStore::open(&uri, self.bucket.clone(), "fleet-token").expect("store"))
    }
    fn put_raw(&self, json: &serde_json::Value) {
        self.bucket.put(OBJECT, json.to_string().into_bytes());
    }
    fn break_service(&self) {
        self.bucket.set_available(false);
    }
    fn repair_service(&self) {
        self.bucket.set_available(true);
    }
    fn denied(&self) -> Result<Arc<dyn KeysetStore>, &'static str> {
        let uri = format!("toy-mem://{OBJECT}");
        let outsider = BucketStore::open(&uri, self.bucket.clone(), "outsider-token");
        Ok(Arc::new(outsider.expect("store")))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_toy_store_meets_the_store_and_integrity_contracts() {
    let dir = scratch("store");
    let toy = ToyStore {
        bucket: Arc::new(Bucket::new("fleet-token")),
    };
    store::run(&toy).await;
    stateseal_contract::integrity::run(&toy, &dir).await;
    let _ = std::fs::remove_dir_all(dir);
}
