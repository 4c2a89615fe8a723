//! The Managed HSM provider under the shared provider contract, against the
//! test kit's double of the documented REST API (Microsoft ships no Key Vault
//! emulator; the CLI's suite has the credential-gated live test).

use std::sync::atomic::Ordering;

use stateseal::provider::{ErrorClass, WrapContext};
use stateseal::{Error, ProviderError, ProviderRegistry};
use stateseal_azure_kv::{AzureCredentialKind, AzureKvConfig};
use stateseal_contract::provider::{self as provider_contract, ProviderUnderTest};
use stateseal_testkit::azure_hsm_contract::AzureHsmContract;

struct ManagedHsm {
    hsm: AzureHsmContract,
    ca: std::path::PathBuf,
    name: &'static str,
}

impl ManagedHsm {
    fn start(dir: &std::path::Path, name: &'static str) -> Self {
        let hsm = AzureHsmContract::start();
        let ca = dir.join("hsm-ca.pem");
        std::fs::write(&ca, &hsm.ca_pem).expect("ca");
        Self { hsm, ca, name }
    }
}

impl ProviderUnderTest for ManagedHsm {
    fn registry(&self) -> ProviderRegistry {
        let mut registry = ProviderRegistry::with_defaults();
        stateseal_azure_kv::register(
            &mut registry,
            AzureKvConfig::builder()
                .endpoint(&self.hsm.endpoint)
                .credential(AzureCredentialKind::Anonymous)
                .ca_file(&self.ca)
                .max_attempts(1)
                .build(),
        );
        registry
    }
    fn kek(&self) -> String {
        self.hsm.kek(self.name)
    }
    // 503 from the service.
    fn outage(&self, on: bool) -> Result<(), &'static str> {
        self.hsm.faults.unavailable.store(on, Ordering::SeqCst);
        Ok(())
    }
    // 401 to every token, as to an expired or refused one.
    fn credentials_failing(&self, on: bool) -> Result<(), &'static str> {
        self.hsm.faults.unauthenticated.store(on, Ordering::SeqCst);
        Ok(())
    }
    // The key disabled: 403.
    fn revoked(&self, on: bool) -> Result<(), &'static str> {
        self.hsm.set_enabled(self.name, !on);
        Ok(())
    }
}

fn temp_dir(what: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("stateseal-azure-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn managed_hsm_meets_the_provider_contract() {
    let dir = temp_dir("contract");
    let hsm = ManagedHsm::start(&dir, "stateseal");
    hsm.hsm.create_aes_key("stateseal");
    provider_contract::run(&hsm, &dir).await;
    let _ = std::fs::remove_dir_all(dir);
}

const CTX: WrapContext<'static> = WrapContext {
    keyset_id: "ks_azure",
    entry_id: "k_1",
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_rsa_key_is_refused_with_the_reason_before_any_wrap() {
    let dir = temp_dir("rsa");
    let hsm = ManagedHsm::start(&dir, "rsa");
    hsm.hsm.create_rsa_key("rsa");
    let registry = hsm.registry();
    let kek = hsm.kek();
    let e = registry
        .provider_for(&kek)
        .unwrap()
        .generate(&kek, CTX)
        .await
        .unwrap_err();
    let text = e.to_string();
    assert!(
        matches!(
            e,
            Error::Provider(ProviderError::Kms {
                class: ErrorClass::Config,
                ..
            })
        ),
        "{e:?}"
    );
    assert!(
        text.contains("key rsa is RSA-HSM: an RSA-OAEP wrap is made with the public key"),
        "{text}"
    );
    assert!(
        text.contains("use a Managed HSM AES-256 key (oct-HSM)"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wraps_survive_an_hsm_key_rotation_and_name_their_version() {
    let dir = temp_dir("versions");
    let hsm = ManagedHsm::start(&dir, "k");
    let first = hsm.hsm.create_aes_key("k");
    let registry = hsm.registry();
    let kek = hsm.kek();
    let provider = registry.provider_for(&kek).unwrap();
    let old = provider.generate(&kek, CTX).await.unwrap();
    assert!(
        old.wrapped
            .windows(first.len())
            .any(|w| w == first.as_bytes())
    );
    let second = hsm.hsm.create_aes_key("k");
    let new = provider.generate(&kek, CTX).await.unwrap();
    assert!(
        new.wrapped
            .windows(second.len())
            .any(|w| w == second.as_bytes()),
        "new wraps use the current version"
    );
    let back = provider.unwrap(&kek, &old.wrapped, CTX).await.unwrap();
    assert_eq!(
        back.expose(),
        old.plaintext.expose(),
        "the old version still unwraps"
    );
    // A URI pinned to the first version wraps with it.
    let pinned = format!("{kek}/{first}");
    let p = provider.generate(&pinned, CTX).await.unwrap();
    assert!(
        p.wrapped
            .windows(first.len())
            .any(|w| w == first.as_bytes())
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_naming_another_key_is_discarded() {
    let dir = temp_dir("kid");
    let hsm = ManagedHsm::start(&dir, "k");
    hsm.hsm.create_aes_key("k");
    let registry = hsm.registry();
    let kek = hsm.kek();
    let provider = registry.provider_for(&kek).unwrap();
    hsm.hsm.faults.wrong_kid.store(1, Ordering::SeqCst);
    let e = provider.generate(&kek, CTX).await.unwrap_err();
    assert!(
        matches!(
            e,
            Error::Provider(ProviderError::Kms {
                class: ErrorClass::Transient,
                ..
            })
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("names another key"), "{e}");
    assert!(
        provider.generate(&kek, CTX).await.is_ok(),
        "the next call goes through"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_certificate_is_refused() {
    let dir = temp_dir("tls");
    let hsm = AzureHsmContract::start();
    hsm.create_aes_key("k");
    let mut registry = ProviderRegistry::with_defaults();
    stateseal_azure_kv::register(
        &mut registry,
        AzureKvConfig::builder()
            .endpoint(&hsm.endpoint)
            .credential(AzureCredentialKind::Anonymous)
            .max_attempts(1)
            .build(),
    );
    let kek = hsm.kek("k");
    let e = registry
        .provider_for(&kek)
        .unwrap()
        .generate(&kek, CTX)
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Provider(ProviderError::Kms {
                class: ErrorClass::Transient,
                ..
            })
        ),
        "{e:?}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
