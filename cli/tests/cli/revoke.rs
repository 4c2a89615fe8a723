//! `stateseal revoke`: an entry written into the authenticated document,
//! listed by `status` and `keyset show`; every bad input is refused with a
//! message and exit code 2 and leaves the keyset's bytes as they were; the
//! principal never reaches the output or the document.

use serde_json::Value;
use stateseal::keyset::MAX_REVOCATIONS;
use stateseal::{FileStore, ProviderRegistry, Revocation};

use crate::operator::{Ks, cli};
use crate::{payload_of, text};

const T0: f64 = 1_782_345_600.0;
const PRINCIPAL: &str = r#"["app-1","https://as.example","alice@example.com"]"#;

/// `stateseal <args> --store … --now T0+dt --allow-clock-override`.
fn run(ks: &Ks, args: &[&str], dt: f64) -> std::process::Output {
    cli()
        .args(args)
        .args(["--store", &ks.store, "--now", &(T0 + dt).to_string()])
        .arg("--allow-clock-override")
        .output()
        .expect("run")
}

/// Inspections take no `--allow-clock-override`.
fn look(ks: &Ks, args: &[&str], dt: f64) -> std::process::Output {
    cli()
        .args(args)
        .args(["--store", &ks.store, "--now", &(T0 + dt).to_string()])
        .output()
        .expect("run")
}

fn json(out: &std::process::Output) -> Value {
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("json")
}

#[test]
fn revoke_writes_an_entry_that_status_and_show_list() {
    let ks = Ks::new("revoke-list");
    ks.init();
    let file = ks.dir.join("principal.json");
    // With the final newline an editor or `echo` leaves: not part of the principal.
    std::fs::write(&file, format!("{PRINCIPAL}\n")).expect("write");
    let first = run(
        &ks,
        &[
            "revoke",
            "--principal-file",
            file.to_str().unwrap(),
            "--json",
        ],
        10.0,
    );
    let v = json(&first);
    assert_eq!(v["kind"], "principal");
    assert_eq!(v["written"], true);
    assert_eq!(v["before"], T0 + 10.0, "--before defaults to now");
    assert_eq!(v["expires"], T0 + 10.0 + 600.0 + 60.0);
    assert_eq!(v["principal_sha256_prefix"].as_str().map(str::len), Some(8));
    assert_eq!(
        v["min_generation"], v["generation"],
        "the generation that protects the revocation against a restored document and copy"
    );
    assert_eq!(text(&first.stderr), "", "the components form draws no note");
    let out = run(
        &ks,
        &[
            "revoke",
            "--client-id",
            "app-2",
            "--before",
            "2026-06-25T00:00:05Z",
        ],
        20.0,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(
        said.contains("client id \"app-2\"") && said.contains("within R = 30s"),
        "{said}"
    );
    let generation = said
        .split("generation ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the generation written");
    assert!(
        said.contains(&format!(
            "set min_generation = {generation} in every server"
        )),
        "{said}"
    );
    let out = run(
        &ks,
        &["revoke", "--all-before", &(T0 + 1.0).to_string()],
        30.0,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The document holds the digest, never the principal; nothing printed it either.
    let payload = payload_of(&ks.bytes());
    let entries = payload["revocations"].as_array().expect("revocations");
    assert_eq!(entries.len(), 3);
    assert_eq!(
        entries[0]["principal_sha256"].as_str().map(str::len),
        Some(64)
    );
    assert!(!ks.bytes().windows(5).any(|w| w == b"alice"));
    // Listed by status and keyset show, in text and JSON.
    let status = json(&look(&ks, &["status", "--json"], 40.0));
    let kinds: Vec<&str> = status["revocations"]
        .as_array()
        .expect("list")
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["principal", "client_id", "all"]);
    assert_eq!(status["revocations"][1]["client_id"], "app-2");
    let show = look(&ks, &["keyset", "show"], 40.0);
    let shown = text(&show.stdout);
    assert!(
        shown.contains("revocations (3 live)") && shown.contains("\"app-2\""),
        "{shown}"
    );
    // Past before + T + S an entry is no longer listed.
    let later = json(&look(&ks, &["keyset", "show", "--json"], 10.0 + 660.0));
    assert_eq!(later["revocations"].as_array().map(Vec::len), Some(0));
    for out in [&first, &show] {
        assert!(!text(&out.stdout).contains("alice") && !text(&out.stderr).contains("alice"));
    }
}

#[test]
fn bad_input_is_refused_with_exit_2_and_nothing_written() {
    let ks = Ks::new("revoke-bad");
    ks.init();
    let now = (T0 + 10.0).to_string();
    let refuse = |args: &[&str], hint: &str| {
        let before = ks.bytes();
        let out = run(&ks, args, 10.0);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(hint), "{args:?}: expected {hint:?} in: {err}");
        assert!(
            !err.contains("alice"),
            "{args:?} echoed the principal: {err}"
        );
        assert_eq!(ks.bytes(), before, "{args:?} changed the keyset");
    };
    refuse(&["revoke"], "required arguments were not provided");
    refuse(
        &["revoke", "--principal", PRINCIPAL, "--client-id", "app-1"],
        "cannot be used with",
    );
    refuse(
        &["revoke", "--client-id", "app-1", "--all-before", &now],
        "cannot be used with",
    );
    refuse(
        &["revoke", "--all-before", &now, "--before", &now],
        "cannot be used with",
    );
    refuse(
        &["revoke", "--client-id", "app-1", "--before", "yesterday"],
        "expected Unix seconds",
    );
    refuse(
        &["revoke", "--all-before", "1782345600000"],
        "not milliseconds",
    );
    refuse(
        &["revoke", "--all-before", &(T0 + 100.0).to_string()],
        "not ones to come",
    );
    refuse(
        &["revoke", "--all-before", &(T0 - 1000.0).to_string()],
        "has expired already",
    );
    refuse(&["revoke", "--client-id", ""], "must not be empty");
    refuse(&["revoke", "--principal", ""], "must not be empty");
    // With --json, the error is one JSON object on stdout.
    let out = run(
        &ks,
        &[
            "revoke",
            "--all-before",
            &(T0 + 100.0).to_string(),
            "--json",
        ],
        10.0,
    );
    assert_eq!(out.status.code(), Some(2));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["exit_code"], 2);
}

#[test]
fn the_cap_is_a_clear_error_and_the_document_is_unchanged() {
    let ks = Ks::new("revoke-cap");
    ks.init();
    tokio::runtime::Runtime::new().expect("rt").block_on(async {
        let mut registry = ProviderRegistry::with_defaults();
        registry.allow_local_kek();
        let store = FileStore::new(ks.path());
        stateseal_testkit::keysets::resealed(&store, &registry, |d| {
            d.revocations = (0..MAX_REVOCATIONS)
                .map(|i| {
                    Revocation::client_id(&format!("client-{i}"), stateseal_testkit::instant(T0))
                })
                .collect();
        })
        .await;
    });
    let before = ks.bytes();
    let out = run(&ks, &["revoke", "--client-id", "one-more"], 10.0);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("already holds 1000 live revocations") && err.contains("nothing was written"),
        "{err}"
    );
    assert_eq!(ks.bytes(), before);
}

#[test]
fn token_verify_against_the_keyset_refuses_a_revoked_state() {
    let ks = Ks::new("revoke-token");
    ks.init();
    let params = r#"{"name":"deploy","arguments":{}}"#;
    let round = |op: &str, principal: &str, dt: f64, extra: &[&str]| {
        cli()
            .args(["token", op, "--keyset", &ks.store, "--method", "tools/call"])
            .args(["--params", params, "--principal", principal])
            .args(["--now", &(T0 + dt).to_string()])
            .args(extra)
            .output()
            .expect("run")
    };
    let mint = |principal: &str, dt: f64| {
        let out = round("mint", principal, dt, &["--state", "s"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout).trim().to_owned()
    };
    let alice = mint(PRINCIPAL, 10.0);
    let bob = r#"["app-1","https://as.example","bob@example.com"]"#;
    let other = mint(bob, 10.0);
    // From a file ending in a newline, as `echo` writes it: the same principal.
    let file = ks.dir.join("principal.json");
    std::fs::write(&file, format!("{PRINCIPAL}\n")).expect("write");
    let out = run(
        &ks,
        &["revoke", "--principal-file", file.to_str().unwrap()],
        20.0,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Another form is allowed, with a note: it matches only states bound to exactly that text.
    let out = run(&ks, &["revoke", "--principal", "alice"], 21.0);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("note: the principal is not"),
        "{}",
        text(&out.stderr)
    );
    let refused = round("verify", PRINCIPAL, 30.0, &[&alice]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused.stderr));
    assert!(
        text(&refused.stderr).contains("revoked"),
        "{}",
        text(&refused.stderr)
    );
    assert!(round("verify", bob, 30.0, &[&other]).status.success());
    let later = mint(PRINCIPAL, 25.0);
    assert!(round("verify", PRINCIPAL, 30.0, &[&later]).status.success());
}
