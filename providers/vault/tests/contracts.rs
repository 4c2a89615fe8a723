//! The Vault KV v2 store and the Vault transit provider under the shared
//! contracts (`stateseal-contract`), against a real OpenBao (one test binary, so the crate
//! links once).

use std::sync::{Arc, Mutex};

use stateseal::{KeysetStore, ProviderRegistry};
use stateseal_contract::integrity as integrity_contract;
use stateseal_contract::provider::{self as provider_contract, ProviderUnderTest};
use stateseal_contract::store::{self as store_contract, StoreUnderTest};
use stateseal_testkit::openbao::{FLEET_POLICY, OpenBao, OpenBaoOptions};
use stateseal_vault::{SecretString, VaultAuth, VaultConfig};

const STORE: &str = "vault-kv://secret/stateseal/contract";
const KV_PATH: &str = "secret/stateseal/contract";

struct Kv {
    bao: OpenBao,
    token: String,
    /// A token whose policy does not cover the keyset's path.
    outsider: String,
    dir: std::path::PathBuf,
}

fn open_with(addr: &str, token: &str) -> Arc<dyn KeysetStore> {
    let mut registry = ProviderRegistry::with_defaults();
    let config = VaultConfig::builder(addr)
        .auth(VaultAuth::Token(SecretString::new(token)))
        .build();
    stateseal_vault::register(&mut registry, config);
    registry.open_store(STORE).expect("store")
}

impl StoreUnderTest for Kv {
    fn open(&self) -> Arc<dyn KeysetStore> {
        open_with(&self.bao.addr, &self.token)
    }
    fn put_raw(&self, json: &serde_json::Value) {
        let file = self.dir.join("raw.json");
        std::fs::write(&file, json.to_string()).expect("write");
        self.bao
            .ok(&["kv", "put", KV_PATH, &format!("@{}", file.display())]);
    }
    fn holds_oversized(&self) -> Result<(), &'static str> {
        Err(
            "KV v2 itself refuses values over 1 MiB (500: value too large), so no writer can place one",
        )
    }
    fn break_service(&self) {
        self.bao.seal();
    }
    fn repair_service(&self) {
        self.bao.unseal();
    }
    fn denied(&self) -> Result<Arc<dyn KeysetStore>, &'static str> {
        Ok(open_with(&self.bao.addr, &self.outsider))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vault_kv_store_meets_the_store_contract() {
    let dir = std::env::temp_dir().join(format!("stateseal-kv-contract-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let bao = OpenBao::start(&dir.join("openbao"));
    let token = bao.token_with_policy("fleet", FLEET_POLICY);
    let outsider = bao.token_with_policy(
        "outsider",
        r#"path "secret/data/elsewhere/*" { capabilities = ["create", "read", "update"] }"#,
    );
    let kv = Kv {
        bao,
        token,
        outsider,
        dir: dir.clone(),
    };
    store_contract::run(&kv).await;
    metadata_denied_falls_back_to_full_reads(&kv).await;
    integrity_contract::run(&kv, &dir).await;
    let _ = std::fs::remove_dir_all(dir);
}

/// A token that may read the secret but not its KV metadata: conditional
/// reads become full ones (never "unchanged", never an error).
async fn metadata_denied_falls_back_to_full_reads(kv: &Kv) {
    use stateseal::keyset::ConditionalLoad;
    let data_only = kv.bao.token_with_policy(
        "data-only",
        r#"path "secret/data/stateseal/*" { capabilities = ["read"] }"#,
    );
    let store = open_with(&kv.bao.addr, &data_only);
    let current = store.load().await.expect("load");
    let version = match store.load_if_changed(None).await.expect("read") {
        ConditionalLoad::Current { document, version } => {
            assert_eq!(document, current);
            version.expect("a KV read names its version")
        }
        other => panic!("{other:?}"),
    };
    for _ in 0..2 {
        match store.load_if_changed(Some(&version)).await {
            Ok(ConditionalLoad::Current { document, .. }) => assert_eq!(document, current),
            other => panic!("without metadata access a read must be a full one, got {other:?}"),
        }
    }
    // With metadata access the same read is a conditional one.
    assert!(matches!(
        kv.open().load_if_changed(Some(&version)).await,
        Ok(ConditionalLoad::Unchanged)
    ));
}

/// The fleet policy without transit decrypt: access to the KEK withdrawn.
const NO_DECRYPT: &str = r#"
path "transit/datakey/plaintext/stateseal" { capabilities = ["update"] }
path "secret/data/stateseal/*" { capabilities = ["create", "read", "update"] }
"#;

struct Transit {
    bao: Mutex<OpenBao>,
    addr: String,
    token: String,
}

impl ProviderUnderTest for Transit {
    fn registry(&self) -> ProviderRegistry {
        let mut registry = ProviderRegistry::with_defaults();
        let config = VaultConfig::builder(&self.addr)
            .auth(VaultAuth::Token(SecretString::new(self.token.clone())))
            .build();
        stateseal_vault::register(&mut registry, config);
        registry
    }
    fn kek(&self) -> String {
        "hcvault://transit/keys/stateseal".into()
    }
    fn outage(&self, on: bool) -> Result<(), &'static str> {
        let mut bao = self.bao.lock().expect("bao");
        if on {
            bao.stop()
        } else {
            bao.restart()
        }
        Ok(())
    }
    fn credentials_failing(&self, _: bool) -> Result<(), &'static str> {
        Err(
            "a Vault token's failures are Vault's own answers: 403 is a refusal, and login-based methods log in again before reporting it",
        )
    }
    fn revoked(&self, on: bool) -> Result<(), &'static str> {
        let bao = self.bao.lock().expect("bao");
        bao.write_policy("fleet", if on { NO_DECRYPT } else { FLEET_POLICY });
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vault_transit_meets_the_provider_contract() {
    let dir =
        std::env::temp_dir().join(format!("stateseal-transit-contract-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let bao = OpenBao::start(&dir.join("openbao"));
    let token = bao.token_with_policy("fleet", FLEET_POLICY);
    let addr = bao.addr.clone();
    provider_contract::run(
        &Transit {
            bao: Mutex::new(bao),
            addr,
            token,
        },
        &dir,
    )
    .await;
    let _ = std::fs::remove_dir_all(dir);
}

fn class(e: &stateseal::Error) -> Option<stateseal::provider::ErrorClass> {
    match e {
        stateseal::Error::Provider(stateseal::ProviderError::Kms { class, .. }) => Some(*class),
        _ => None,
    }
}

/// A keyset may name a transit key the pins allow only by prefix: an unwrap
/// under a key that ignores the derivation context (not `derived=true`)
/// would drop the wrap's binding, so it is refused, and the probe that tells
/// costs only the first unwrap under each key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vault_transit_refuses_to_unwrap_under_a_key_that_ignores_the_context() {
    use stateseal::KeyProvider;
    use stateseal::provider::{ErrorClass, WrapContext};
    use stateseal_vault::VaultTransitProvider;

    let dir =
        std::env::temp_dir().join(format!("stateseal-transit-unbound-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let bao = OpenBao::start_with(
        &dir.join("openbao"),
        OpenBaoOptions {
            audit: true,
            ..OpenBaoOptions::default()
        },
    );
    let decrypts = |key: &str| bao.requests(&format!("transit/decrypt/{key}"));
    let provider = || {
        let config = VaultConfig::builder(&bao.addr)
            .auth(VaultAuth::Token(SecretString::new(bao.root_token.clone())))
            .build()
            .expect("config");
        VaultTransitProvider::new(config)
    };
    let ctx = WrapContext {
        keyset_id: "ks_a",
        entry_id: "k_1",
    };

    // A key made without derived=true, and a data key wrapped under it.
    bao.ok(&["write", "-f", "transit/keys/plain"]);
    let made: serde_json::Value = serde_json::from_str(&bao.ok(&[
        "write",
        "-format=json",
        "-f",
        "transit/datakey/plaintext/plain",
    ]))
    .expect("json");
    let wrapped = made["data"]["ciphertext"].as_str().expect("ciphertext");
    let plaintext = made["data"]["plaintext"].as_str().expect("plaintext");
    let plain = "hcvault://transit/keys/plain";
    let p = provider();
    for _ in 0..2 {
        let e = p
            .unwrap(plain, wrapped.as_bytes(), ctx)
            .await
            .expect_err("a key that ignores the context must not unwrap");
        assert_eq!(class(&e), Some(ErrorClass::Invalid), "{e}");
        let text = e.to_string();
        assert!(text.contains(plain), "the refusal names the key: {e}");
        assert!(text.contains("derived=true"), "{e}");
        assert!(!text.contains(plaintext) && !text.contains(wrapped) && !text.contains("ks_a"));
    }
    // The unwrap and its probe the first time; the answer is kept, so none the second.
    assert_eq!(decrypts("plain"), 2);
    // Generation under it is refused as before (from the kept answer: no new call).
    let e = p.generate(plain, ctx).await.expect_err("generate");
    assert_eq!(class(&e), Some(ErrorClass::Config), "{e}");

    // A derived key unwraps; the probe costs the first unwrap one decrypt, later ones none.
    let kek = "hcvault://transit/keys/stateseal";
    let dk = provider().generate(kek, ctx).await.expect("generate");
    let p = provider();
    let before = decrypts("stateseal");
    for _ in 0..3 {
        let key = p.unwrap(kek, &dk.wrapped, ctx).await.expect("unwrap");
        assert_eq!(key.expose(), dk.plaintext.expose());
    }
    assert_eq!(decrypts("stateseal") - before, 3 + 1);
    // A wrap moved to another entry still fails as a wrong ciphertext, and costs no probe.
    let moved = WrapContext {
        keyset_id: "ks_a",
        entry_id: "k_2",
    };
    let e = provider()
        .unwrap(kek, &dk.wrapped, moved)
        .await
        .expect_err("moved");
    assert_eq!(class(&e), Some(ErrorClass::Invalid), "{e}");
    drop(bao);
    let _ = std::fs::remove_dir_all(dir);
}

/// Caps first: a document past 1 MiB in KV is refused by its size before
/// any of it is parsed (this one nests deeper than a JSON parser's recursion
/// limit), by the read, the conditional read and the writer's read alike;
/// nothing is written and the secret stays as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vault_kv_store_caps_a_document_before_parsing_it() {
    use stateseal::keyset::MAX_DOCUMENT_BYTES;
    use stateseal::{Error, KeysetError};

    let dir = std::env::temp_dir().join(format!("stateseal-kv-cap-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    // Storage entries up to 8 MiB, so KV holds what the keyset cap must refuse.
    let bao = OpenBao::start_with(
        &dir.join("openbao"),
        OpenBaoOptions {
            max_entry_size: Some(8 << 20),
            ..OpenBaoOptions::default()
        },
    );
    let store = open_with(&bao.addr, &bao.root_token);
    let first = store_contract::document(1, "k_1");
    store
        .compare_and_swap(None, &first)
        .await
        .expect("first write");
    assert_eq!(store.load().await.expect("load"), Some(first));

    let big = format!(
        r#"{{"format":"stateseal.keyset/v2","nest":{}{},"padding":"{}"}}"#,
        "[".repeat(200),
        "]".repeat(200),
        "x".repeat(MAX_DOCUMENT_BYTES)
    );
    let file = dir.join("big.json");
    std::fs::write(&file, big).expect("write");
    bao.ok(&["kv", "put", KV_PATH, &format!("@{}", file.display())]);
    let version = || {
        let meta: serde_json::Value =
            serde_json::from_str(&bao.ok(&["kv", "metadata", "get", "-format=json", KV_PATH]))
                .expect("json");
        meta["data"]["current_version"].as_u64().expect("version")
    };
    assert_eq!(version(), 2);

    let capped = |what: &str, r: Result<(), Error>| match r {
        Err(Error::Keyset(KeysetError::Invalid { field, problem })) => {
            assert_eq!(field, "document", "{what}");
            assert!(
                problem.ends_with(&format!(
                    "bytes, more than the {MAX_DOCUMENT_BYTES} a keyset document may have"
                )),
                "{what}: {problem}"
            );
            assert!(!problem.contains("xxxx"), "{what}: {problem}");
        }
        other => {
            panic!("{what}: a document past the cap must be refused by its size, got {other:?}")
        }
    };
    capped("load", store.load().await.map(drop));
    capped(
        "conditional load",
        store.load_if_changed(None).await.map(drop),
    );
    let second = store_contract::document(2, "k_2");
    capped(
        "compare-and-swap",
        store.compare_and_swap(Some(1), &second).await,
    );
    // Nothing written: the oversized version is still the current one.
    assert_eq!(version(), 2);
    drop(bao);
    let _ = std::fs::remove_dir_all(dir);
}
