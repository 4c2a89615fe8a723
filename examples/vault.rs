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

#[path = "fixtures/openbao.rs"]
mod openbao;

use std::time::{Duration, Instant};

use stateseal::rotation::{Phase, RotateMode, init_keyset};
use stateseal::setup::{Config, Protection, start};
use stateseal::{Error, ProviderRegistry, RequestIdentity};
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

    // 2. Create the keyset once (what `stateseal init` does); a second run reuses it.
    let kv = registry.open_store(&store)?;
    match init_keyset(
        &*kv,
        &registry,
        &kek,
        stateseal::Clock::now(&stateseal::SystemClock),
    )
    .await
    {
        Ok(doc) => println!("created keyset {} in {store}", doc.id),
        Err(Error::Conflict { .. }) => println!("using the existing keyset in {store}"),
        Err(e) => return Err(e),
    }

    // 3. Three instances with short timings: refresh 1 s, skew 2 s, TTL 20 s (P = 2R + S = 4 s).
    let config = Config::from_toml_str(&format!(
        "store = {store:?}\naudience = \"vault-example\"\nrefresh_interval = 1\nmax_skew = 2\nttl = 20\n"
    ))?;
    let mut fleet: Vec<Protection> = Vec::new();
    for _ in 0..3 {
        fleet.push(start(&config, registry.clone()).await?);
    }
    let round = RequestIdentity::for_call("tools/call", "deploy", None);
    let check = |fleet: &[Protection], label: &str| -> Result<(), Error> {
        for (i, minter) in fleet.iter().enumerate() {
            let token = minter.boundary().envelope().mint(&round, label, None)?;
            for verifier in fleet {
                verifier
                    .boundary()
                    .envelope()
                    .verify(&round, &token, None)?;
            }
            if i == 0 && label != "during rotation" {
                println!(
                    "  {label}: instance 0 seals with {}",
                    &minter.status().ring[0]
                );
            }
        }
        Ok(())
    };
    check(&fleet, "before rotation")?;

    // 4. Rotate (what `stateseal rotate` or the age trigger does): one compare-and-swap write.
    let doc = fleet[0].rotate(RotateMode::Scheduled).await?;
    println!(
        "rotated: generation {}, new key activates in 4 s",
        doc.generation
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = None;
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        // Every pair must keep working while the instances pick the new document up.
        check(&fleet, "during rotation")?;
        let phases: Vec<Option<Phase>> = fleet.iter().map(|p| p.status().phase).collect();
        if last.as_ref() != Some(&phases) {
            println!("  phases per instance: {phases:?}");
            last = Some(phases.clone());
        }
        if phases.iter().all(|p| *p == Some(Phase::Two)) {
            break;
        }
        if Instant::now() > deadline {
            fail("the fleet did not reach phase 2 within 30 s");
        }
    }
    check(&fleet, "after the switch")?;
    println!("every instance verified every other's states through the rotation");
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
