//! One test binary for the `stateseal` command and the provider crates it
//! links (linking the cloud SDKs once, not once per file).

mod aead;
mod aws;
mod aws_endpoints;
mod aws_faults;
mod azure;
mod bench_demo;
mod cloud_flow;
mod commands;
mod failing_claimants;
mod gcp;
mod gcs;
mod integrity;
mod keyset_commands;
mod member;
mod operator;
mod operator_inputs;
mod proxy;
mod races;
mod revoke;
mod simulate;
mod token_files;
mod vault;
mod vault_auth;

use stateseal_testkit::{gcp_kms_contract, moto, openbao};

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Runs the `stateseal` binary with extra environment variables.
pub(crate) fn stateseal_with(args: &[&str], envs: &[(&str, &str)], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_stateseal"))
        .args(args)
        .envs(envs.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run stateseal");
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input)
            .expect("write stdin");
    }
    drop(child.stdin.take());
    child.wait_with_output().expect("wait")
}

/// Runs the `stateseal` binary.
pub(crate) fn stateseal(args: &[&str], stdin: Option<&[u8]>) -> Output {
    stateseal_with(args, &[], stdin)
}

pub(crate) fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The command's verdict: the last line on stderr (after any warnings).
pub(crate) fn verdict(out: &Output) -> String {
    text(&out.stderr)
        .trim()
        .lines()
        .last()
        .unwrap_or("")
        .to_owned()
}

/// The payload of a stored `stateseal.keyset/v2` document: what it says,
/// read by the test without the MAC key (the test trusts its own writes).
pub(crate) fn payload_of(stored: &[u8]) -> serde_json::Value {
    use base64::Engine;
    let envelope: serde_json::Value = serde_json::from_slice(stored).expect("envelope");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(envelope["payload"].as_str().expect("payload"))
        .expect("base64");
    serde_json::from_slice(&bytes).expect("payload json")
}

/// `envelope` with its payload edited: what a writer without the KEK can do.
pub(crate) fn with_payload_edit(
    stored: &[u8],
    edit: impl Fn(&mut serde_json::Value),
) -> serde_json::Value {
    use base64::Engine;
    let mut envelope: serde_json::Value = serde_json::from_slice(stored).expect("envelope");
    let mut payload = payload_of(stored);
    edit(&mut payload);
    envelope["payload"] = base64::engine::general_purpose::STANDARD
        .encode(serde_json::to_vec(&payload).expect("json"))
        .into();
    envelope
}

/// A `--json` failure: its exit code, and the message from the JSON on stdout.
pub(crate) fn json_error(out: &Output, code: i32) -> String {
    assert_eq!(out.status.code(), Some(code), "{}", text(&out.stdout));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["exit_code"], code);
    v["error"].as_str().expect("error").to_owned()
}

pub(crate) fn json_of(out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)))
}

/// A fresh directory under the target's test tmp dir.
pub(crate) fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "{name}-{}-{}",
        std::process::id(),
        unique()
    ));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}
