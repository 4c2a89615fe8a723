//! What reaches the logs (every level, the Azure SDK's own included) and the
//! errors while the Managed HSM provider works against the test kit's double.
//! A test binary of its own: tracing's per-thread capture is reliable only
//! with no other test's subscriber changing callsite interest meanwhile.

use std::sync::atomic::Ordering;

use stateseal::ProviderRegistry;
use stateseal::provider::WrapContext;
use stateseal_azure_kv::{AzureCredentialKind, AzureKvConfig};
use stateseal_testkit::azure_hsm_contract::AzureHsmContract;

const CTX: WrapContext<'static> = WrapContext {
    keyset_id: "ks_azure",
    entry_id: "k_1",
};

/// Every level of every log line (the Azure SDK's included), and every error,
/// while keys are wrapped, unwrapped, refused and the token is refused:
/// none carries the data key, its wrap, or the bearer token.
#[tokio::test]
async fn no_key_wrap_or_token_reaches_logs_or_errors() {
    use base64::Engine;
    let dir = std::env::temp_dir().join(format!("stateseal-azure-logs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let double = AzureHsmContract::start();
    double.create_aes_key("k");
    let ca = dir.join("hsm-ca.pem");
    std::fs::write(&ca, &double.ca_pem).expect("ca");
    let logs = stateseal_testkit::logs::Logs::default();
    let guard = logs.capture_all();
    let mut registry = ProviderRegistry::with_defaults();
    stateseal_azure_kv::register(
        &mut registry,
        AzureKvConfig::builder()
            .endpoint(&double.endpoint)
            .credential(AzureCredentialKind::Anonymous)
            .ca_file(&ca)
            .max_attempts(1)
            .build(),
    );
    let kek = double.kek("k");
    let provider = registry.provider_for(&kek).unwrap();
    let key = provider.generate(&kek, CTX).await.unwrap();
    let back = provider.unwrap(&kek, &key.wrapped, CTX).await.unwrap();
    assert_eq!(back.expose(), key.plaintext.expose());
    let other = WrapContext {
        keyset_id: "ks_azure",
        entry_id: "k_2",
    };
    let mut errors = vec![
        provider
            .unwrap(&kek, &key.wrapped, other)
            .await
            .unwrap_err(),
    ];
    double.faults.unauthenticated.store(true, Ordering::SeqCst);
    errors.push(provider.unwrap(&kek, &key.wrapped, CTX).await.unwrap_err());
    double.faults.unauthenticated.store(false, Ordering::SeqCst);
    drop(guard);
    let text = format!(
        "{}\n{errors:?}\n{}",
        logs.text(),
        errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    );
    let secret = key.plaintext.expose();
    let engines = [
        base64::engine::general_purpose::STANDARD,
        base64::engine::general_purpose::STANDARD_NO_PAD,
        base64::engine::general_purpose::URL_SAFE,
        base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ];
    let mut forbidden = vec![
        secret
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>(),
        "stateseal-anonymous".to_owned(),
    ];
    for e in engines {
        forbidden.push(e.encode(secret));
        // The wrap's ciphertext part (its last 32 bytes), as it travels.
        forbidden.push(e.encode(&key.wrapped[key.wrapped.len() - 32..]));
    }
    for f in &forbidden {
        assert!(
            !text.contains(f.trim_end_matches('=')),
            "{f} reached the logs or errors:\n{text}"
        );
    }
    println!(
        "checked {} bytes of logs and {} errors",
        logs.text().len(),
        errors.len()
    );
    assert!(
        logs.text()
            .contains("typespec_client_core::http::policies::logging"),
        "the SDK's request log was captured:\n{}",
        logs.text()
    );
    let _ = std::fs::remove_dir_all(dir);
}
