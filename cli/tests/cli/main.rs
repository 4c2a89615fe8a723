//! One test binary for the `stateseal` command and the provider crates it
//! links (linking the cloud SDKs once, not once per file).

mod aws;
mod commands;
mod gcp;
mod gcs;
mod gcs_fleet;
mod member;
mod operator;
mod races;
mod vault;

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

/// What `status --json` says about unavailable keys: it exits 1 and names each cause.
pub(crate) fn unavailable(out: &Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)));
    let keys = v["keys"].as_array().expect("keys");
    assert!(keys.iter().any(|k| k["available"] == false), "{v}");
    keys.iter()
        .filter_map(|k| k["error"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
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
