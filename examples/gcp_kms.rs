//! The GCP-native fleet: data keys from the OS CSPRNG, wrapped by Cloud KMS
//! `Encrypt` with the keyset and entry as AAD and CRC32C checked end to end;
//! the keyset in Cloud Storage (`gs://`), which every instance reads and
//! rotations write conditionally on the object's generation.
//!
//! ```sh
//! # Against Cloud KMS and Cloud Storage (Application Default Credentials; the
//! # bindings of terraform/gcp-kms; the operator identity creates the keyset):
//! cargo run --example gcp_kms -- --kek gcp-kms://projects/P/locations/L/keyRings/R/cryptoKeys/K \
//!     --store gs://my-stateseal-bucket/mcp/keyset.json
//! # Self-contained: the Cloud KMS REST contract double and fake-gcs-server behind
//! # the test kit's precondition front (scripts/svc-env.sh installs the emulator):
//! cargo run --example gcp_kms -- --dev
//! ```

#[path = "fixtures/fleet_tour.rs"]
mod fleet_tour;

use stateseal::{Error, ProviderRegistry};
use stateseal_gcp_kms::GcpKmsConfig;
use stateseal_object_store::GcsConfig;
use stateseal_testkit::fake_gcs::FakeGcs;
use stateseal_testkit::gcp_kms_contract;
use stateseal_testkit::gcs_front::GcsPreconditionFront;

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
            _ => fail("usage: gcp_kms [--dev] [--kek gcp-kms://… --store gs://BUCKET/OBJECT]"),
        }
    }
    let dir = std::env::temp_dir().join(format!("stateseal-gcp-example-{}", std::process::id()));
    let mut registry = ProviderRegistry::with_defaults();
    let _services = if dev {
        let kms = gcp_kms_contract::GcpKmsContract::start().await;
        let name = kms.create_key("stateseal");
        println!(
            "started the Cloud KMS contract double at {} with {name}",
            kms.endpoint
        );
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| fail(e));
        let gcs = FakeGcs::start(&dir);
        gcs.create_bucket("stateseal-example");
        let front = GcsPreconditionFront::start(&gcs);
        println!(
            "started fake-gcs-server at {} behind the precondition front at {}",
            gcs.addr, front.endpoint
        );
        kek.get_or_insert(format!("gcp-kms://{name}"));
        store.get_or_insert("gs://stateseal-example/mcp/keyset.json".to_owned());
        let config = GcpKmsConfig::builder()
            .endpoint(&kms.endpoint)
            .anonymous_credentials(true)
            .build()?;
        stateseal_gcp_kms::register(&mut registry, Ok(config));
        let config = GcsConfig::builder()
            .endpoint(&front.endpoint)
            .anonymous_credentials(true)
            .build()?;
        stateseal_object_store::register_gcs(&mut registry, Ok(config));
        Some((kms, front, gcs))
    } else {
        // Application Default Credentials; STATESEAL_GCP_KMS_ENDPOINT and
        // STATESEAL_GCS_ENDPOINT override the endpoints.
        stateseal_gcp_kms::register(&mut registry, GcpKmsConfig::from_env());
        stateseal_object_store::register_gcs(&mut registry, GcsConfig::from_env());
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
