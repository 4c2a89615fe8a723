//! The Cloud KMS provider under the shared provider contract, against the
//! documented REST contract's double (no Cloud KMS emulator exists to install;
//! the CLI's suite runs the live test when credentials are configured).

use std::sync::atomic::Ordering;

use stateseal::ProviderRegistry;
use stateseal_contract::provider::{self as provider_contract, ProviderUnderTest};
use stateseal_gcp_kms::GcpKmsConfig;
use stateseal_testkit::gcp_kms_contract::GcpKmsContract;

struct CloudKms {
    kms: GcpKmsContract,
    name: String,
}

impl ProviderUnderTest for CloudKms {
    fn registry(&self) -> ProviderRegistry {
        let mut registry = ProviderRegistry::with_defaults();
        stateseal_gcp_kms::register(
            &mut registry,
            GcpKmsConfig::builder()
                .endpoint(&self.kms.endpoint)
                .anonymous_credentials(true)
                .max_attempts(1)
                .build(),
        );
        registry
    }
    fn kek(&self) -> String {
        format!("gcp-kms://{}", self.name)
    }
    // UNAVAILABLE from the service.
    fn outage(&self, on: bool) -> Result<(), &'static str> {
        self.kms.faults.unavailable.store(on, Ordering::SeqCst);
        Ok(())
    }
    // UNAUTHENTICATED, as to an expired or unrefreshed token.
    fn credentials_failing(&self, on: bool) -> Result<(), &'static str> {
        self.kms.faults.unauthenticated.store(on, Ordering::SeqCst);
        Ok(())
    }
    // The key version disabled: FAILED_PRECONDITION.
    fn revoked(&self, on: bool) -> Result<(), &'static str> {
        self.kms
            .set_state(&self.name, 1, if on { "DISABLED" } else { "ENABLED" });
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cloud_kms_meets_the_provider_contract() {
    let dir = std::env::temp_dir().join(format!("stateseal-gcp-contract-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let kms = GcpKmsContract::start().await;
    let name = kms.create_key("stateseal");
    provider_contract::run(&CloudKms { kms, name }, &dir).await;
    let _ = std::fs::remove_dir_all(dir);
}
