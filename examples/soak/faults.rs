//! Faults of the key plane injected into the running fleet, and how each was
//! seen: the keyset store flapping (OpenBao sealed and unsealed, again and
//! again), a garbage document and an older generation put into the store, and
//! an AppRole secret id rotated under a running server. Every process must keep
//! serving on its last good document, report the fault (`refresh_ok: false`),
//! never take the bad document, and recover once the store is repaired.

use std::cell::Cell;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::fleet::Server;
use stateseal_testkit::openbao::OpenBao;

/// The KV path behind the soak's `vault-kv://secret/stateseal/soak` store.
const KV_PATH: &str = "secret/stateseal/soak";

/// What one fault did to the fleet.
pub(crate) struct Seen {
    pub(crate) fault: &'static str,
    pub(crate) at_s: f64,
    /// Processes that reported their refresh failing during the fault (`None`:
    /// the fault is meant to be invisible, such as a re-login).
    pub(crate) reported: Option<usize>,
    /// Processes that stayed ready on the generation they had before.
    pub(crate) kept_serving: usize,
    /// Processes refreshing cleanly again after the repair.
    pub(crate) recovered: usize,
    pub(crate) processes: usize,
}

impl Seen {
    pub(crate) fn ok(&self) -> bool {
        self.reported.is_none_or(|r| r == self.processes)
            && self.kept_serving == self.processes
            && self.recovered == self.processes
    }

    pub(crate) fn json(&self) -> Value {
        json!({"fault": self.fault, "at_s": (self.at_s * 10.0).round() / 10.0, "reported": self.reported,
               "kept_serving": self.kept_serving, "recovered": self.recovered, "processes": self.processes})
    }
}

/// The generation each process serves (`None` when it does not answer).
pub(crate) fn generations(servers: &[Server]) -> Vec<Option<u64>> {
    servers
        .iter()
        .map(|s| s.stats().and_then(|st| st["generation"].as_u64()))
        .collect()
}

/// Polls `/stats` until every process satisfies `cond` or `within` passes; returns how many did.
fn count_until(
    servers: &[Server],
    within: Duration,
    cond: impl Fn(usize, &Value) -> bool,
) -> usize {
    let deadline = Instant::now() + within;
    loop {
        let n = servers
            .iter()
            .enumerate()
            .filter(|(i, s)| s.stats().is_some_and(|st| cond(*i, &st)))
            .count();
        if n == servers.len() || Instant::now() >= deadline {
            return n;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// After a rotation: waits up to `within` until every process serves a
/// generation newer than the one it served before (`before`); returns how
/// many do. The plan keeps rotations out of the store outage's way, but its
/// events run late on a slow machine (each fault waits for the processes to
/// report it): a rotation 0.6 s before the outage left two processes without
/// the new key, and the third, whose clock is ahead, sealed with it.
pub(crate) fn await_rotation(
    servers: &[Server],
    before: &[Option<u64>],
    within: Duration,
) -> usize {
    count_until(servers, within, |i, st| {
        st["refresh_ok"] == true && st["generation"].as_u64() > before.get(i).copied().flatten()
    })
}

/// Runs `break_it`, checks every process reports it while it keeps serving
/// (never going back to an older generation, when `hold_generation`: a process
/// may still adopt a good document written just before the fault), runs
/// `repair`, and checks every process recovers.
fn observe(
    servers: &[Server],
    fault: &'static str,
    at_s: f64,
    hold_generation: bool,
    break_it: impl FnOnce(),
    repair: impl FnOnce(),
) -> Seen {
    let before = generations(servers);
    break_it();
    let reported = count_until(servers, Duration::from_secs(4), |_, st| {
        st["refresh_ok"] == false
    });
    let kept_serving = servers
        .iter()
        .zip(&before)
        .filter(|(s, g)| {
            s.stats().is_some_and(|st| {
                st["ready"] == true && (!hold_generation || st["generation"].as_u64() >= **g)
            })
        })
        .count();
    repair();
    let recovered = count_until(servers, Duration::from_secs(8), |_, st| {
        st["refresh_ok"] == true && st["ready"] == true
    });
    Seen {
        fault,
        at_s,
        reported: Some(reported),
        kept_serving,
        recovered,
        processes: servers.len(),
    }
}

fn current_version(bao: &OpenBao) -> u64 {
    let text = bao.ok(&["kv", "metadata", "get", "-format=json", KV_PATH]);
    serde_json::from_str::<Value>(&text)
        .map_or(0, |v| v["data"]["current_version"].as_u64().unwrap_or(0))
}

/// OpenBao sealed for a second and unsealed, three times over.
pub(crate) fn store_flap(bao: &OpenBao, servers: &[Server], at_s: f64) -> Seen {
    observe(
        servers,
        "store_flapping",
        at_s,
        // Between the outages the store is readable, and servers write to it.
        false,
        || {
            for round in 0..3 {
                bao.seal();
                std::thread::sleep(Duration::from_millis(1200));
                if round < 2 {
                    bao.unseal();
                    std::thread::sleep(Duration::from_millis(800));
                }
            }
        },
        || bao.unseal(),
    )
}

/// A document that is not a keyset, then the last good version restored.
pub(crate) fn garbage_document(bao: &OpenBao, servers: &[Server], at_s: f64) -> Seen {
    let good = Cell::new(0);
    observe(
        servers,
        "garbage_document",
        at_s,
        true,
        || good.set(replace_current(bao, &["format=not-a-keyset"])),
        || restore(bao, good.get()),
    )
}

/// Writes `data` over the current version with check-and-set, retrying if a
/// server wrote in between; returns the version it replaced. A plain write
/// after reading the version could land on a document a server had just
/// written, and the repair would then roll the fleet back for real.
fn replace_current(bao: &OpenBao, data: &[&str]) -> u64 {
    for _ in 0..20 {
        let good = current_version(bao);
        let cas = format!("-cas={good}");
        let mut args = vec!["kv", "put", cas.as_str(), KV_PATH];
        args.extend_from_slice(data);
        if bao.bao(&args).status.success() {
            return good;
        }
    }
    panic!("soak: the fault could not be written: the store kept changing");
}

/// Puts version `good` back, only on top of the fault's own version (`good + 1`):
/// while the fault is in place no server can write (each refuses the document).
fn restore(bao: &OpenBao, good: u64) {
    let file = std::env::temp_dir().join(format!(
        "stateseal-soak-restore-{}.json",
        std::process::id()
    ));
    save_version(bao, Some(good), &file);
    bao.ok(&[
        "kv",
        "put",
        &format!("-cas={}", good + 1),
        KV_PATH,
        &format!("@{}", file.display()),
    ]);
    let _ = std::fs::remove_file(&file);
}

/// Saves the document as it is now (for [`older_generation`] to put back later).
pub(crate) fn save_document(bao: &OpenBao, file: &Path) {
    save_version(bao, None, file);
}

/// Writes the document at `version` (the current one for `None`) to `file`, in
/// the form `kv put KV_PATH @file` reads back.
fn save_version(bao: &OpenBao, version: Option<u64>, file: &Path) {
    let version = version.map(|v| format!("-version={v}"));
    let mut args = vec!["kv", "get", "-format=json"];
    args.extend(version.as_deref());
    args.push(KV_PATH);
    let text = bao.ok(&args);
    let data =
        serde_json::from_str::<Value>(&text).map_or(Value::Null, |v| v["data"]["data"].clone());
    let _ = std::fs::write(file, data.to_string());
}

/// An older document (saved by [`save_document`]) written over the current one,
/// as a careless restore would; then the last good version put back.
pub(crate) fn older_generation(bao: &OpenBao, servers: &[Server], saved: &Path, at_s: f64) -> Seen {
    let good = Cell::new(0);
    let older = format!("@{}", saved.display());
    observe(
        servers,
        "older_generation",
        at_s,
        true,
        || good.set(replace_current(bao, &[older.as_str()])),
        || restore(bao, good.get()),
    )
}

/// Enables AppRole with a role for the fleet whose tokens live `ttl`; returns its role id.
pub(crate) fn approle_role(bao: &OpenBao, ttl: &str) -> String {
    bao.ok(&["auth", "enable", "approle"]);
    bao.ok(&[
        "write",
        "auth/approle/role/fleet",
        "token_policies=fleet",
        &format!("token_ttl={ttl}"),
        "token_max_ttl=24h",
    ]);
    bao.bao_json(&["read", "auth/approle/role/fleet/role-id"])["data"]["role_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A new secret id for the fleet role, written where the server reads it.
pub(crate) fn issue_secret_id(bao: &OpenBao, file: &Path) -> String {
    let id =
        bao.bao_json(&["write", "-f", "auth/approle/role/fleet/secret-id"])["data"]["secret_id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
    let _ = std::fs::write(file, &id);
    id
}

/// The secret id rotated under the running AppRole server: a new one written to
/// its file, the old one destroyed and its login tokens revoked, so only a
/// server that reads the file again can log in.
pub(crate) fn rotate_secret_id(
    bao: &OpenBao,
    server: &Server,
    file: &Path,
    old: &str,
    at_s: f64,
) -> (Seen, String) {
    let new = issue_secret_id(bao, file);
    bao.ok(&[
        "write",
        "auth/approle/role/fleet/secret-id/destroy",
        &format!("secret_id={old}"),
    ]);
    bao.ok(&["token", "revoke", "-mode=path", "auth/approle/login"]);
    // Two refresh intervals later every token it had is revoked and its first
    // secret id destroyed: refreshing cleanly means it logged in with the new one.
    std::thread::sleep(Duration::from_millis(2500));
    let one = std::slice::from_ref(server);
    let seen = Seen {
        fault: "approle_secret_id_rotated",
        at_s,
        reported: None,
        kept_serving: count_until(one, Duration::from_secs(4), |_, st| st["ready"] == true),
        recovered: count_until(one, Duration::from_secs(4), |_, st| {
            st["refresh_ok"] == true
        }),
        processes: 1,
    };
    (seen, new)
}
