//! A fleet sharing keys through AWS: KMS wraps the data keys (encryption
//! context = keyset and entry), S3 holds the keyset with conditional writes,
//! three instances load it, one rotates, and states minted by any instance
//! verify on every other through all three phases.
//!
//! ```sh
//! # Against AWS (the standard credential chain; the role needs the policy of terraform/aws-kms):
//! cargo run --example aws_kms -- --kek aws-kms://arn:aws:kms:eu-west-1:111122223333:alias/stateseal \
//!     --store s3://my-stateseal-bucket/mcp/keyset.json
//! # Self-contained: starts a throwaway moto server (scripts/svc-env.sh installs it):
//! cargo run --example aws_kms -- --dev
//! ```

#[path = "fixtures/fleet_tour.rs"]
mod fleet_tour;

use stateseal::{Error, ProviderRegistry};
use stateseal_aws_kms::AwsConfig;
use stateseal_object_store::S3Config;
use stateseal_testkit::moto;

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
            _ => fail("usage: aws_kms [--dev] [--kek aws-kms://ARN --store s3://BUCKET/KEY]"),
        }
    }
    let dir = std::env::temp_dir().join(format!("stateseal-aws-example-{}", std::process::id()));
    let mut registry = ProviderRegistry::with_defaults();
    let _server = if dev {
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| fail(e));
        let moto = moto::Moto::start(&dir);
        let (_, alias_arn, _) = moto.create_key("stateseal");
        moto.create_bucket("stateseal-example");
        println!("started moto at {} with {alias_arn}", moto.endpoint);
        kek.get_or_insert(format!("aws-kms://{alias_arn}"));
        store.get_or_insert("s3://stateseal-example/mcp/keyset.json".to_owned());
        let creds =
            aws_credential_types::Credentials::new("testing", "testing", None, None, "moto");
        let kms = AwsConfig::builder()
            .endpoint_url(&moto.endpoint)
            .region(moto::REGION)
            .credentials(creds.clone())
            .build()?;
        let s3 = S3Config::builder()
            .endpoint_url(&moto.endpoint)
            .region(moto::REGION)
            .credentials(creds)
            .build()?;
        stateseal_aws_kms::register(&mut registry, kms);
        stateseal_object_store::register_s3(&mut registry, s3);
        Some(moto)
    } else {
        // The standard chain: environment, profile, SSO, web identity, instance metadata.
        stateseal_aws_kms::register(&mut registry, AwsConfig::builder().build()?);
        stateseal_object_store::register_s3(&mut registry, S3Config::builder().build()?);
        None
    };
    let (Some(kek), Some(store)) = (kek, store) else {
        fail("--kek and --store are required without --dev (terraform/aws-kms outputs both)");
    };
    fleet_tour::fleet_tour(&registry, &kek, &store).await?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
