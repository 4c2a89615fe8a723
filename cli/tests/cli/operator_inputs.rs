//! How operators talk to the keyset commands: times, files, stdin and the
//! environment as inputs; JSON answers and errors that never echo a secret.
//! Every bad input is refused with its message and exit code, and leaves the
//! keyset's bytes as they were.

use crate::operator::{Ks, T0, at, cli, json, text};
use crate::scratch;

#[test]
fn bad_times_are_refused_before_anything_is_written() {
    let ks = Ks::new("op-times");
    // init: nothing created, not even the KEK file.
    let init = |extra: &[&str]| {
        cli()
            .args(["init", "--kek", &ks.kek, "--store", &ks.store])
            .args(extra)
            .output()
            .expect("run")
    };
    for (extra, hint) in [
        (&["--now", "1782345600000"][..], "milliseconds"),
        (&["--now", "1782345600"], "--allow-clock-override"),
        (&["--state-ttl", "0"], "ttl"),
    ] {
        let out = init(extra);
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        assert!(
            text(&out.stderr).contains(hint),
            "{extra:?}: {}",
            text(&out.stderr)
        );
    }
    assert_eq!(
        std::fs::read_dir(&ks.dir).expect("dir").count(),
        0,
        "a refused init leaves nothing behind"
    );
    ks.init();
    ks.refused(
        &["rotate", "--now", "1782345600100"],
        None,
        2,
        "milliseconds",
    );
    // An inspection's instant must be seconds, and a time a document can hold.
    for (now, hint) in [
        ("nan", "expected seconds like 1782345600"),
        ("inf", "expected seconds like 1782345600"),
        ("-1", "expected seconds like 1782345600"),
        (
            "1782345600000",
            "must be Unix seconds between 1970 and 9999",
        ),
    ] {
        let flag = format!("--now={now}");
        for command in [&["status"][..], &["check"], &["keyset", "show"]] {
            let args: Vec<&str> = command.iter().copied().chain([flag.as_str()]).collect();
            ks.refused(&args, None, 2, hint);
        }
    }
    let far = cli()
        .args(["rotate", "--store", &ks.store, "--now", "1782345700"])
        .output()
        .expect("run");
    assert_eq!(far.status.code(), Some(2));
    assert!(
        text(&far.stderr).contains("more than S (60s)"),
        "{}",
        text(&far.stderr)
    );
    // Overrides may only slow a rotation down.
    ks.refused(
        &["rotate", "--state-ttl", "60"],
        100.0,
        2,
        "shorter than the keyset's profile",
    );
    // ... and no further than the servers admit (P + S of the profile: 120 + 60 s).
    ks.refused(
        &["rotate", "--propagation", "181"],
        100.0,
        2,
        "later than the keyset's profile allows (P + S = 180s)",
    );
    // Seconds past what a duration holds are refused by the flag that took
    // them (clap's usage error), before anything is read or written.
    let huge = "99999999999999999999999";
    for args in [
        &["keyset", "renew", "--generation", "1", "--validity", huge][..],
        &["rotate", "--if-due", "--rotation-period", huge],
    ] {
        let err = ks.refused(args, 100.0, 2, "expected seconds that fit a duration");
        assert!(err.contains(huge), "{err}");
    }
    // A refused init on an existing keyset changes nothing.
    let again = cli()
        .args(["init", "--kek", &ks.kek, "--store", &ks.store])
        .args(at(0.0))
        .output()
        .expect("run");
    assert_eq!(again.status.code(), Some(1));
    assert!(text(&again.stderr).contains("already holds a keyset"));
}

#[test]
fn inputs_come_from_files_stdin_and_the_environment() {
    let ks = Ks::new("op-inputs");
    ks.init();
    let params = ks.dir.join("params.json");
    std::fs::write(&params, r#"{"name":"deploy","arguments":{"env":"prod"}}"#).expect("params");
    let at_file = format!("@{}", params.display());
    let mint = cli()
        .env("STATESEAL_STORE", "file:///nonexistent/ignored.json")
        .args([
            "token",
            "mint",
            "--keyset",
            &ks.store,
            "--method",
            "tools/call",
        ])
        .args([
            "--params",
            &at_file,
            "--state",
            "s1",
            "--now",
            &(T0 + 5.0).to_string(),
        ])
        .output()
        .expect("run");
    assert!(mint.status.success(), "{}", text(&mint.stderr));
    let token = text(&mint.stdout).trim().to_owned();
    // Params from stdin, token from a file through --params @, and token `-` from stdin.
    let verify = cli()
        .args([
            "token",
            "verify",
            "--keyset",
            &ks.store,
            "--method",
            "tools/call",
        ])
        .args(["--params", &at_file, "--now", &(T0 + 6.0).to_string(), "-"])
        .write_stdin(format!("{token}\n"))
        .output()
        .expect("run");
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify.stderr));
    assert_eq!(verify.stdout, b"s1");
    let by_stdin = cli()
        .args([
            "token",
            "verify",
            "--keyset",
            &ks.store,
            "--method",
            "tools/call",
        ])
        .args(["--params", "-", "--now", &(T0 + 6.0).to_string(), &token])
        .write_stdin(r#"{"name":"deploy","arguments":{"env":"prod"}}"#)
        .output()
        .expect("run");
    assert_eq!(
        by_stdin.status.code(),
        Some(0),
        "{}",
        text(&by_stdin.stderr)
    );
    // STATESEAL_STORE is --store's default.
    let status = cli()
        .env("STATESEAL_STORE", &ks.store)
        .args(["status", "--json", "--now", &(T0 + 7.0).to_string()])
        .output()
        .expect("run");
    assert_eq!(json(&status)["generation"], 1);
    // token inspect: the key id, and whether the ring holds it.
    let inspect = cli()
        .args(["token", "inspect", "--keyset", &ks.store, "--json", "-"])
        .args(["--now", &(T0 + 7.0).to_string()])
        .write_stdin(token.clone())
        .output()
        .expect("run");
    let i = json(&inspect);
    assert_eq!(
        (i["in_ring"].clone(), i["role"].clone()),
        (true.into(), "primary".into())
    );
    assert_eq!(i["kid"], json(&status)["primary"]);
    // A keyset key seals v2 tokens; a static key v1 ones: each named as it is.
    assert!(token.starts_with("v2."));
    assert_eq!(i["version"], "v2");
    let v1 = cli()
        .args([
            "token",
            "seal",
            "--key",
            &format!("hex:{}", "ab".repeat(32)),
        ])
        .write_stdin("x")
        .output()
        .expect("run");
    let v1 = text(&v1.stdout).trim().to_owned();
    assert!(v1.starts_with("v1."), "{v1}");
    let plain = cli().args(["token", "inspect", &v1]).output().expect("run");
    assert!(
        text(&plain.stdout).starts_with("version v1, key id "),
        "{}",
        text(&plain.stdout)
    );
    let other = Ks::new("op-inputs-other");
    other.init();
    let foreign = cli()
        .args(["token", "inspect", "--keyset", &other.store, &token])
        .args(["--now", &(T0 + 7.0).to_string()])
        .output()
        .expect("run");
    assert_eq!(foreign.status.code(), Some(1));
    assert!(
        text(&foreign.stdout).contains("does not hold key"),
        "{}",
        text(&foreign.stdout)
    );
    assert!(
        text(&foreign.stdout).starts_with("version v2, key id "),
        "{}",
        text(&foreign.stdout)
    );
    let garbage = cli()
        .args(["token", "inspect", "v2.nope"])
        .output()
        .expect("run");
    assert_eq!(garbage.status.code(), Some(1));
    assert!(
        text(&garbage.stderr)
            .contains("not a well-formed token (it must start with `v1.` or `v2.`"),
        "{}",
        text(&garbage.stderr)
    );
    assert!(garbage.stdout.is_empty());
}

#[test]
fn errors_are_json_with_json_and_never_echo_secrets() {
    let secret = "hex:5ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2";
    // Without --key the key is an unexpected positional argument: clap would quote it back.
    let out = cli()
        .args([
            "token",
            "mint",
            secret,
            "--method",
            "tools/call",
            "--params",
            "{}",
            "--state",
            "awaiting-s3cr3t",
        ])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(all.contains("unexpected argument '<redacted>'"), "{all}");
    assert!(
        !all.contains("5ec2e7") && !all.contains("s3cr3t"),
        "secret echoed: {all}"
    );
    // The same, as JSON.
    let out = cli()
        .args([
            "token",
            "mint",
            secret,
            "--json",
            "--principal",
            "alice-s3cr3t",
        ])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let v = json(&out);
    let message = v["error"].as_str().expect("error");
    assert!(
        !message.contains("5ec2e7") && !message.contains("s3cr3t"),
        "{message}"
    );
    assert_eq!(v["exit_code"], 2);
    // A command's own error, as JSON on stdout.
    let out = cli()
        .args(["status", "--json", "--store", "file://relative/keyset.json"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        json(&out)["error"]
            .as_str()
            .expect("error")
            .contains("absolute path")
    );
    // An inline key works but warns.
    let out = cli()
        .args(["token", "seal", "--key", secret])
        .write_stdin("x")
        .output()
        .expect("run");
    assert!(out.status.success());
    assert!(text(&out.stderr).contains("prefer file:PATH or env:VAR"));
    assert!(!text(&out.stderr).contains("5ec2e7"));
}

#[test]
fn the_demo_refuses_a_duration_too_short_for_three_phases() {
    let out = cli()
        .args(["demo", "--duration", "8"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("at least 26"),
        "{}",
        text(&out.stderr)
    );
    assert!(out.stdout.is_empty(), "nothing started");
}

#[test]
fn token_commands_answer_in_json_too() {
    let dir = scratch("op-token-json");
    let key = dir.join("state.key");
    std::fs::write(&key, [9u8; 32]).expect("key");
    let spec = format!("file:{}", key.display());
    let now = T0.to_string();
    let round = [
        "--method",
        "tools/call",
        "--params",
        r#"{"name":"t"}"#,
        "--now",
        &now,
        "--json",
    ];
    let mint = cli()
        .args(["token", "mint", "--key", &spec, "--state", "s-json"])
        .args(round)
        .output()
        .expect("run");
    let m = json(&mint);
    let token = m["token"].as_str().expect("token").to_owned();
    assert_eq!(m["expires_at_rfc3339"], "2026-06-25T00:10:00Z");
    assert_eq!(m["kid"].as_str().map(str::len), Some(8));
    let verify = cli()
        .args(["token", "verify", "--key", &spec])
        .args(round)
        .arg(&token)
        .output()
        .expect("run");
    assert_eq!(
        json(&verify),
        serde_json::json!({"valid": true, "state": "s-json"})
    );
    let rejected = cli()
        .args(["token", "verify", "--key", &spec])
        .args(round)
        .arg(format!("{token}x"))
        .output()
        .expect("run");
    assert_eq!(rejected.status.code(), Some(1));
    assert_eq!(json(&rejected)["error"], "rejected: malformed");
    let sealed = cli()
        .args(["token", "seal", "--key", &spec, "--json"])
        .write_stdin("raw")
        .output()
        .expect("run");
    let t = json(&sealed)["token"].as_str().expect("token").to_owned();
    let opened = cli()
        .args(["token", "open", "--key", &spec, "--json", &t])
        .output()
        .expect("run");
    assert_eq!(json(&opened)["payload_base64"], "cmF3");
}
