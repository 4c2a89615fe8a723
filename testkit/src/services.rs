//! Where the test services come from, and where they listen.

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// The workspace root (the test kit is one of its members).
pub(crate) fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A binary `cargo test --workspace` built beside the running test
/// (`examples/NAME` or `NAME` under the target directory's profile).
///
/// # Panics
/// When it is missing, saying how to build it.
pub fn built(path: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary");
    let bin = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target dir")
        .join(path);
    assert!(
        bin.exists(),
        "{} is missing: `cargo test --workspace` builds it (or `cargo build --workspace --examples --bins`)",
        bin.display()
    );
    bin
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

/// A loopback port free right now, and never one this process was given before.
///
/// The probe's listener is closed before the caller's service binds the
/// port, and the kernel may hand a closed port out again: two services a test
/// starts side by side would then both be told the same port. So the ports
/// handed out are remembered, and a probe that lands on one draws again.
///
/// # Panics
/// When loopback cannot be bound, or a thousand probes in a row land on ports
/// already handed out.
pub fn free_port() -> u16 {
    static GIVEN: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
    let mut given = GIVEN.lock().unwrap_or_else(PoisonError::into_inner);
    for _ in 0..1000 {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        if given.insert(port) {
            return port;
        }
    }
    panic!(
        "free port: a thousand probes in a row gave ports already handed out ({} of them)",
        given.len()
    )
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

#[cfg(test)]
mod tests {
    use super::free_port;

    /// The kernel draws an ephemeral port at random from about 28,000, so
    /// 2,000 bare probes repeat one almost surely (the birthday bound);
    /// handed-out ports never repeat.
    #[test]
    fn ports_handed_out_never_repeat() {
        let mut ports: Vec<u16> = (0..2000).map(|_| free_port()).collect();
        ports.sort_unstable();
        let drawn = ports.len();
        ports.dedup();
        assert_eq!(ports.len(), drawn, "a port was handed out twice");
        assert!(ports.iter().all(|&p| p > 0));
    }
}
