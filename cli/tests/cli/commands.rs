//! The `stateseal` binary: token tools, exit codes, and no secret in any message.

use crate::{stateseal, text, verdict};

const KEY_HEX: &str = "3031323334353637383961626364656630313233343536373839616263646566";
pub(crate) const PARAMS: &str = r#"{"name":"deploy","arguments":{"env":"prod"}}"#;

fn mint(extra: &[&str]) -> String {
    let key = format!("hex:{KEY_HEX}");
    let mut args = vec![
        "token",
        "mint",
        "--key",
        &key,
        "--method",
        "tools/call",
        "--params",
        PARAMS,
        "--state",
        "awaiting-confirm",
    ];
    args.extend_from_slice(extra);
    let out = stateseal(&args, None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout).trim().to_owned()
}

#[test]
fn mint_then_verify_prints_the_state_and_exit_codes_mean_what_they_say() {
    let key = format!("hex:{KEY_HEX}");
    let token = mint(&[
        "--audience",
        "manual",
        "--now",
        "1782345600",
        "--principal",
        "alice",
    ]);
    let verify = |params: &str, now: &str, principal: &str| {
        stateseal(
            &[
                "token",
                "verify",
                "--key",
                &key,
                "--method",
                "tools/call",
                "--params",
                params,
                "--audience",
                "manual",
                "--now",
                now,
                "--principal",
                principal,
                &token,
            ],
            None,
        )
    };
    let ok = verify(PARAMS, "1782345600.5", "alice");
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    assert_eq!(ok.stdout, b"awaiting-confirm");
    for (params, now, principal, reason) in [
        (
            r#"{"name":"deploy","arguments":{"env":"staging"}}"#,
            "1782345600",
            "alice",
            "request binding",
        ),
        (PARAMS, "1782346200", "alice", "expired"),
        (PARAMS, "1782345600", "bob", "principal"),
    ] {
        let out = verify(params, now, principal);
        assert_eq!(out.status.code(), Some(1));
        assert_eq!(verdict(&out), format!("rejected: {reason}"));
        assert!(
            out.stdout.is_empty(),
            "a rejected state must print nothing on stdout"
        );
    }
}

#[test]
fn python_vector_token_verifies_through_the_cli() {
    // tools_call_basic from tests/data/python-mcp-2.3.0.json, minted by the Python SDK.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/python-mcp-2.3.0.json");
    let vectors: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).expect("vectors")).expect("json");
    let case = &vectors["seal"][0];
    assert_eq!(case["label"], "tools_call_basic");
    let key = format!("hex:{KEY_HEX}");
    let token = case["token"].as_str().expect("token");
    let out = stateseal(
        &[
            "token",
            "verify",
            "--key",
            &key,
            "--method",
            "tools/call",
            "--params",
            PARAMS,
            "--audience",
            "manual",
            "--now",
            "1782345600",
            token,
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(out.stdout, b"awaiting-confirm");
    // What a server decides, byte for byte: a trailing newline or space is a different token.
    for padded in [
        format!("{token}\n"),
        format!(" {token}"),
        format!("{token} "),
    ] {
        let out = stateseal(
            &[
                "token",
                "verify",
                "--key",
                &key,
                "--method",
                "tools/call",
                "--params",
                PARAMS,
                "--audience",
                "manual",
                "--now",
                "1782345600",
                &padded,
            ],
            None,
        );
        assert_eq!(out.status.code(), Some(1), "{padded:?}");
        assert!(out.stdout.is_empty());
        assert!(
            text(&out.stderr).contains("rejected"),
            "{}",
            text(&out.stderr)
        );
    }
    let out = stateseal(&["token", "open", "--key", &key, token], None);
    assert_eq!(
        text(&out.stdout),
        case["payload_exact"].as_str().expect("payload")
    );
}

#[test]
fn seal_and_open_roundtrip_bytes_with_a_rotated_ring() {
    let dir = std::env::temp_dir().join(format!("stateseal-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let old = dir.join("old.key");
    std::fs::write(&old, [7u8; 32]).expect("key file");
    let payload = b"\x00\xffbinary payload";
    let sealed = stateseal(
        &["token", "seal", "--key", &format!("file:{}", old.display())],
        Some(payload),
    );
    assert!(sealed.status.success(), "{}", text(&sealed.stderr));
    let token = text(&sealed.stdout).trim().to_owned();
    // [new, old]: the old key still opens.
    let opened = stateseal(
        &[
            "token",
            "open",
            "--key",
            "text:a brand new secret that is long enough!!",
            "--key",
            &format!("file:{}", old.display()),
            &token,
        ],
        None,
    );
    assert_eq!(opened.status.code(), Some(0), "{}", text(&opened.stderr));
    assert_eq!(opened.stdout, payload);
    // [new]: retired.
    let retired = stateseal(
        &[
            "token",
            "open",
            "--key",
            "text:a brand new secret that is long enough!!",
            &token,
        ],
        None,
    );
    assert_eq!(retired.status.code(), Some(1));
    assert_eq!(verdict(&retired), "rejected: unknown key");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn usage_errors_exit_2_name_the_fix_and_never_echo_a_secret() {
    let cases: [(&[&str], &str); 6] = [
        (
            &[
                "token",
                "open",
                "--key",
                "s3cr3t-bare-value-that-is-long-enough",
                "v1.x",
            ],
            // Says what it does with inline secrets: accepted, with a warning (not "refused").
            "hex:, b64: and text: are accepted with a warning",
        ),
        (
            &["token", "open", "--key", "text:s3cr3t-short", "v1.x"],
            "keys[0] is 12 bytes",
        ),
        (
            &["token", "open", "--key", "hex:zzs3cr3t", "v1.x"],
            "not valid hex",
        ),
        (
            &[
                "token",
                "open",
                "--key",
                "env:STATESEAL_TEST_UNSET_VAR",
                "v1.x",
            ],
            "not set",
        ),
        (
            &[
                "token",
                "open",
                "--key",
                "file:/nonexistent/s3cr3t.key",
                "v1.x",
            ],
            "cannot read the key file",
        ),
        (
            &[
                "token",
                "mint",
                "--key",
                "text:s3cr3t-s3cr3t-s3cr3t-s3cr3t-s3cr3t",
                "--method",
                "tools/call",
                "--params",
                "{",
                "--state",
                "x",
            ],
            "--params",
        ),
    ];
    for (args, hint) in cases {
        let out = stateseal(args, None);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(hint), "{args:?}: {err}");
        assert!(
            !err.contains("s3cr3t") || err.contains("/nonexistent/s3cr3t.key"),
            "secret echoed: {err}"
        );
    }
    let bad_now = stateseal(
        &[
            "token",
            "verify",
            "--key",
            "text:x",
            "--method",
            "m",
            "--params",
            "{}",
            "--now",
            "yesterday",
            "t",
        ],
        None,
    );
    assert_eq!(bad_now.status.code(), Some(2));
    assert!(text(&bad_now.stderr).contains("expected seconds"));
}
