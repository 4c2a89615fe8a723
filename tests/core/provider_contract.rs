//! The local provider under the published provider contract (`stateseal-contract`).

use stateseal::{LocalProvider, ProviderRegistry};
use stateseal_contract::provider::{self as provider_contract, ProviderUnderTest};

use crate::fleet::{local_registry, temp_dir};

struct Local {
    kek: String,
}

impl ProviderUnderTest for Local {
    fn registry(&self) -> ProviderRegistry {
        local_registry()
    }
    fn kek(&self) -> String {
        self.kek.clone()
    }
    fn outage(&self, _: bool) -> Result<(), &'static str> {
        Err("a local KEK needs no network")
    }
    fn credentials_failing(&self, _: bool) -> Result<(), &'static str> {
        Err("a local KEK has no credentials")
    }
    fn revoked(&self, _: bool) -> Result<(), &'static str> {
        Err("a local KEK file has no access control beyond its mode, which root ignores")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_provider_meets_the_provider_contract() {
    let dir = temp_dir("provider-contract");
    let kek = dir.join("kek.bin");
    LocalProvider::create_kek(&kek).expect("kek");
    provider_contract::run(
        &Local {
            kek: format!("local://{}", kek.display()),
        },
        &dir,
    )
    .await;
    let _ = std::fs::remove_dir_all(dir);
}
