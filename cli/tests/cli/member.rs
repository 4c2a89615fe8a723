//! What every provider test uses: wrap contexts, error classes, and one
//! fleet member (a scheduler on a manual clock plus its envelope).

use std::sync::Arc;

use stateseal::provider::{ErrorClass, WrapContext};
use stateseal::{Error, KeysetStore, ProviderError, ProviderRegistry};

pub(crate) const PARAMS: &str = r#"{"name":"deploy","arguments":{"env":"prod"}}"#;
pub(crate) const T0: f64 = 1_782_345_600.0;

pub(crate) fn ctx<'a>(keyset_id: &'a str, entry_id: &'a str) -> WrapContext<'a> {
    WrapContext {
        keyset_id,
        entry_id,
    }
}

pub(crate) fn class(e: &Error) -> Option<ErrorClass> {
    match e {
        Error::Provider(ProviderError::Kms { class, .. }) => Some(*class),
        _ => None,
    }
}

pub(crate) fn base64_of(b: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(b)
}

pub(crate) use stateseal_testkit::member::{Member as Instance, round};

/// A fleet member pinned to the keyset `store` holds, as its operator would configure it.
pub(crate) async fn instance(reg: &ProviderRegistry, store: Arc<dyn KeysetStore>) -> Instance {
    Instance::pinned(reg, store, stateseal_testkit::instant(T0)).await
}

/// `init --json`'s pins as the variables a CLI or server process reads.
pub(crate) fn pin_vars(init: &serde_json::Value) -> Vec<(&'static str, String)> {
    let keks: Vec<&str> = init["keyset_keks"]
        .as_array()
        .expect("keyset_keks")
        .iter()
        .map(|k| k.as_str().expect("kek"))
        .collect();
    vec![
        (
            "STATESEAL_KEYSET_ID",
            init["keyset"].as_str().expect("keyset").to_owned(),
        ),
        ("STATESEAL_KEYSET_KEKS", keks.join(",")),
    ]
}

pub(crate) fn works(i: &Instance, now: f64) -> bool {
    i.works(stateseal_testkit::instant(now))
}

/// Four operators run `stateseal rotate` on `store` at the same instant;
/// asserts exactly one lands and the others are refused (exit 1, not an error).
pub(crate) fn rotate_concurrently(store: &str, envs: &[(&str, String)]) {
    let children: Vec<_> = (0..4)
        .map(|_| {
            std::process::Command::new(env!("CARGO_BIN_EXE_stateseal"))
                .args([
                    "rotate",
                    "--store",
                    store,
                    "--now",
                    &(T0 + 50.0).to_string(),
                    "--allow-clock-override",
                ])
                .envs(envs.iter().map(|(k, v)| (*k, v.as_str())))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect();
    let outs: Vec<_> = children
        .into_iter()
        .map(|c| c.wait_with_output().expect("wait"))
        .collect();
    let won = outs.iter().filter(|o| o.status.success()).count();
    let stderr: Vec<_> = outs.iter().map(|o| crate::text(&o.stderr)).collect();
    assert_eq!(won, 1, "{stderr:?}");
    for o in outs.iter().filter(|o| !o.status.success()) {
        assert_eq!(o.status.code(), Some(1), "{}", crate::text(&o.stderr));
    }
}

/// `stateseal token mint --keyset STORE` for the test's round at `T0 + dt`; returns the token.
pub(crate) fn keyset_mint(store: &str, envs: &[(&str, &str)], dt: f64) -> String {
    let now = (T0 + dt).to_string();
    let out = crate::stateseal_with(
        &[
            "token",
            "mint",
            "--keyset",
            store,
            "--method",
            "tools/call",
            "--params",
            PARAMS,
            "--state",
            "awaiting-confirm",
            "--now",
            &now,
        ],
        envs,
        None,
    );
    assert!(out.status.success(), "{}", crate::text(&out.stderr));
    crate::text(&out.stdout).trim().to_owned()
}

/// `stateseal token verify --keyset STORE` of `token` for the test's round at `T0 + dt`.
pub(crate) fn keyset_verify(
    store: &str,
    envs: &[(&str, &str)],
    token: &str,
    dt: f64,
) -> std::process::Output {
    let now = (T0 + dt).to_string();
    crate::stateseal_with(
        &[
            "token",
            "verify",
            "--keyset",
            store,
            "--method",
            "tools/call",
            "--params",
            PARAMS,
            "--now",
            &now,
            token,
        ],
        envs,
        None,
    )
}
