//! A fleet sharing keys through Vault / OpenBao: transit wraps the data keys,
//! KV v2 holds the keyset, three instances load it, one rotates, and states
//! minted by any instance verify on every other through all three phases.
//!
//! ```sh
//! # Against your Vault (token, or STATESEAL_VAULT_AUTH=approle|kubernetes …):
//! export VAULT_ADDR=https://vault.example:8200 VAULT_TOKEN=…
//! cargo run --example vault -- --kek hcvault://transit/keys/stateseal --store vault-kv://secret/stateseal/keyset
//! # Self-contained: starts a throwaway OpenBao (scripts/svc-env.sh installs `bao`):
//! cargo run --example vault -- --dev
//! ```

#[path = "fixtures/fleet_tour.rs"]
mod fleet_tour;

use stateseal::{Error, ProviderRegistry};
use stateseal_testkit::openbao;
use stateseal_vault::{SecretString, VaultAuth, VaultConfig};

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(2);
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let mut kek = "hcvault://transit/keys/stateseal".to_owned();
    let mut store = "vault-kv://secret/stateseal/example-keyset".to_owned();
    let mut dev = false;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--dev" => dev = true,
            "--kek" => kek = args.next().unwrap_or_else(|| fail("--kek needs a URI")),
            "--store" => store = args.next().unwrap_or_else(|| fail("--store needs a URI")),
            _ => fail("usage: vault [--dev] [--kek hcvault://…] [--store vault-kv://…]"),
        }
    }
    // 1. Configure the provider: from VAULT_* variables, or a throwaway OpenBao.
    let dir = std::env::temp_dir().join(format!("stateseal-vault-example-{}", std::process::id()));
    let (_server, vault) = if dev {
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| fail(e));
        let bao = openbao::OpenBao::start(&dir);
        println!(
            "started OpenBao at {} (transit key `stateseal`, derived)",
            bao.addr
        );
        let config = VaultConfig::builder(&bao.addr)
            .auth(VaultAuth::Token(SecretString::new(bao.root_token.clone())))
            .build();
        (Some(bao), config)
    } else {
        (None, VaultConfig::from_env())
    };
    let mut registry = ProviderRegistry::with_defaults();
    stateseal_vault::register(&mut registry, vault);

    fleet_tour::fleet_tour(&registry, &kek, &store).await?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
