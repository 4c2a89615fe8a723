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
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

/// Polls `up` every 100 ms until it answers true.
///
/// # Panics
/// When `child` exits first or 30 s pass, with the service's log in the message
/// (the child is killed first, so a half-started server never outlives the test).
pub(crate) fn wait_until(
    name: &str,
    child: &mut Option<std::process::Child>,
    log: &Path,
    mut up: impl FnMut() -> bool,
) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !up() {
        let exited = child.as_mut().and_then(|c| c.try_wait().ok().flatten());
        if exited.is_some() || std::time::Instant::now() >= deadline {
            if let Some(c) = child.as_mut() {
                let _ = c.kill();
                let _ = c.wait();
            }
            panic!(
                "{name} did not start ({exited:?}): {}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
