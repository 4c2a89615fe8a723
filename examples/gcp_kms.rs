//! A fleet sharing keys through Cloud KMS: data keys from the OS CSPRNG,
//! wrapped by `Encrypt` with the keyset and entry as AAD and CRC32C checked end
//! to end; the keyset in a file (or Vault KV) that every instance reads.
//!
//! ```sh
//! # Against Cloud KMS (Application Default Credentials; the service account needs
//! # roles/cloudkms.cryptoKeyEncrypterDecrypter on the key, see terraform/gcp-kms):
//! cargo run --example gcp_kms -- --kek gcp-kms://projects/P/locations/L/keyRings/R/cryptoKeys/K \
//!     --store file:///shared/stateseal/keyset.json
//! # Self-contained: against the Cloud KMS REST contract double the tests use:
//! cargo run --example gcp_kms -- --dev
//! ```

#[path = "fixtures/fleet_tour.rs"]
mod fleet_tour;

use stateseal::{Error, ProviderRegistry};
use stateseal_gcp_kms::GcpKmsConfig;
use stateseal_testkit::gcp_kms_contract;

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(2);
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (mut kek, mut store, mut dev) = (None, None, false);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--dev" => dev = true,
            "--kek" => kek = Some(args.next().unwrap_or_else(|| fail("--kek needs a URI"))),
            "--store" => store = Some(args.next().unwrap_or_else(|| fail("--store needs a URI"))),
            _ => fail("usage: gcp_kms [--dev] [--kek gcp-kms://… --store file://…|vault-kv://…]"),
        }
    }
    let dir = std::env::temp_dir().join(format!("stateseal-gcp-example-{}", std::process::id()));
    let mut registry = ProviderRegistry::with_defaults();
    let _double = if dev {
        let kms = gcp_kms_contract::GcpKmsContract::start().await;
        let name = kms.create_key("stateseal");
        println!(
            "started the Cloud KMS contract double at {} with {name}",
            kms.endpoint
        );
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| fail(e));
        kek.get_or_insert(format!("gcp-kms://{name}"));
        store.get_or_insert(format!("file://{}", dir.join("keyset.json").display()));
        let config = GcpKmsConfig::builder()
            .endpoint(&kms.endpoint)
            .anonymous_credentials(true)
            .build()?;
        stateseal_gcp_kms::register(&mut registry, Ok(config));
        Some(kms)
    } else {
        // Application Default Credentials; STATESEAL_GCP_KMS_ENDPOINT overrides the endpoint.
        stateseal_gcp_kms::register(&mut registry, GcpKmsConfig::from_env());
        stateseal_vault::register(&mut registry, stateseal_vault::VaultConfig::from_env());
        None
    };
    let (Some(kek), Some(store)) = (kek, store) else {
        fail(
            "--kek and --store are required without --dev (terraform/gcp-kms outputs the KEK URI)",
        );
    };
    fleet_tour::fleet_tour(&registry, &kek, &store).await?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
