//! Where the test services come from, and where they listen.

use std::net::TcpListener;
use std::path::{Path, PathBuf};

/// The workspace root (the test kit is one of its members).
pub(crate) fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A program from the project's service venv (`scripts/svc-env.sh`), or the
/// one the environment variable `var` names (as `scripts/test.sh` sets it).
///
/// # Panics
/// When neither exists, saying how to install it.
pub(crate) fn program(var: &str, name: &str) -> PathBuf {
    if let Some(p) = std::env::var_os(var) {
        return PathBuf::from(p);
    }
    let venv = workspace().join("target/svcenv/bin").join(name);
    if venv.exists() {
        return venv;
    }
    panic!("{name} is needed: run scripts/svc-env.sh (or set {var} to it)")
}

/// A loopback port free right now.
pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}
