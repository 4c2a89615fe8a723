//! The AWS KMS provider under the shared (`stateseal-contract`) provider contract,
//! against a real AWS-API server (moto, with key states enforced) through a
//! relay the test can cut.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use aws_credential_types::provider::error::CredentialsError;
use aws_credential_types::provider::{ProvideCredentials, future};
use stateseal::ProviderRegistry;
use stateseal_aws_kms::AwsConfig;
use stateseal_contract::provider::{self as provider_contract, ProviderUnderTest};
use stateseal_testkit::moto::{Moto, REGION};
use stateseal_testkit::relay::Relay;

/// Test credentials, or (switched) the chain timing out as an instance
/// metadata service does. Short-lived, so the SDK asks again on every call.
#[derive(Debug, Clone)]
struct Chain(Arc<AtomicBool>);

impl ProvideCredentials for Chain {
    fn provide_credentials<'a>(&'a self) -> future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        future::ProvideCredentials::ready(if self.0.load(Ordering::SeqCst) {
            Err(CredentialsError::provider_timed_out(Duration::from_secs(1)))
        } else {
            Ok(Credentials::new(
                "AKIDTEST",
                "test-secret",
                None,
                Some(SystemTime::now() + Duration::from_secs(1)),
                "contract",
            ))
        })
    }
}

struct Kms {
    moto: Moto,
    relay: Relay,
    key_id: String,
    key_arn: String,
    failing: Arc<AtomicBool>,
}

impl ProviderUnderTest for Kms {
    fn registry(&self) -> ProviderRegistry {
        let mut registry = ProviderRegistry::with_defaults();
        let config = AwsConfig::builder()
            .endpoint_url(&self.relay.endpoint)
            .region(REGION)
            .credentials_provider(Chain(Arc::clone(&self.failing)))
            .max_attempts(1)
            .build()
            .expect("config");
        stateseal_aws_kms::register(&mut registry, config);
        registry
    }
    fn kek(&self) -> String {
        format!("aws-kms://{}", self.key_arn)
    }
    fn outage(&self, on: bool) -> Result<(), &'static str> {
        if on {
            self.relay.cut()
        } else {
            self.relay.restore()
        }
        Ok(())
    }
    fn credentials_failing(&self, on: bool) -> Result<(), &'static str> {
        self.failing.store(on, Ordering::SeqCst);
        Ok(())
    }
    fn revoked(&self, on: bool) -> Result<(), &'static str> {
        let op = if on { "disable_key" } else { "enable_key" };
        self.moto
            .boto(&format!("kms.{op}(KeyId='{}')", self.key_id));
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aws_kms_meets_the_provider_contract() {
    let dir = std::env::temp_dir().join(format!("stateseal-kms-contract-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let moto = Moto::start(&dir);
    let (key_arn, _, key_id) = moto.create_key("stateseal");
    let relay = Relay::start(format!("127.0.0.1:{}", moto.port)).await;
    provider_contract::run(
        &Kms {
            moto,
            relay,
            key_id,
            key_arn,
            failing: Arc::new(AtomicBool::new(false)),
        },
        &dir,
    )
    .await;
    let _ = std::fs::remove_dir_all(dir);
}
