//! The `stateseal` binary: token tools, exit codes, and no secret in any message.

use crate::{json_of, scratch, stateseal, stateseal_with, text, verdict};

const KEY_HEX: &str = "3031323334353637383961626364656630313233343536373839616263646566";
const PARAMS: &str = r#"{"name":"deploy","arguments":{"env":"prod"}}"#;

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

#[test]
fn bench_json_prints_one_object_per_line() {
    let out = stateseal(&["bench", "--json", "--sizes", "64", "--millis", "5"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    let ops: Vec<&str> = lines
        .iter()
        .map(|l| l["op"].as_str().expect("op"))
        .collect();
    assert_eq!(
        ops,
        [
            "identity",
            "mint",
            "verify",
            "round",
            "round_v2",
            "round_v2_cold",
            "mint_lower_bound",
            "raw_seal",
            "raw_open",
            "nonce",
            "args_sha256"
        ]
    );
    for l in lines.iter().filter(|l| l["op"] != "mint_lower_bound") {
        assert_eq!(l["state_bytes"], 64);
        assert!(l["ns_per_op"].as_f64().expect("ns") > 0.0);
    }
    // The least identity + mint can cost is the floor plus a hash: above 1x the floor.
    assert!(lines[6]["ratio_to_raw"].as_f64().expect("bound") > 1.0);
    // The v2 rounds are measured against the v1 round of the same run.
    assert!(lines[4]["ratio_to_v1_round"].as_f64().expect("v2 ratio") > 0.0);
    assert!(lines[5]["ratio_to_v1_round"].as_f64().expect("cold ratio") > 0.0);
    for l in &lines[1..3] {
        let ns = l["ns_per_op"].as_f64().expect("ns");
        assert!(l["ratio_to_raw"].as_f64().expect("ratio") > 0.0);
        // Adding the identity's cost can only make an op dearer.
        assert!(l["with_identity_ns"].as_f64().expect("with identity") > ns * 0.5);
        assert!(
            l["with_identity_ratio_to_raw"].as_f64().expect("ratio")
                >= l["ratio_to_raw"].as_f64().expect("ratio")
        );
    }
    // A round does the identity, a verify and a mint: dearer than each of them.
    let round = lines[3]["ns_per_op"].as_f64().expect("round");
    for l in &lines[..3] {
        assert!(round > l["ns_per_op"].as_f64().expect("ns") * 0.5);
    }
}

#[test]
fn keyset_walks_through_three_phases_with_status_and_keyset_tokens() {
    let dir = std::env::temp_dir().join(format!("stateseal-cli-ks-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("tmp");
    let store = format!("file://{}", dir.join("keyset.json").display());
    let kek = format!("local://{}", dir.join("kek.bin").display());
    let t0 = 1_782_345_600u64;
    let at = |dt: u64| (t0 + dt).to_string();
    let init = json_of(&stateseal(
        &[
            "init",
            "--kek",
            &kek,
            "--store",
            &store,
            "--now",
            &at(0),
            "--allow-clock-override",
            "--json",
        ],
        None,
    ));
    let first = init["kid"].as_str().expect("kid").to_owned();
    let status = |dt: u64| {
        json_of(&stateseal(
            &["status", "--store", &store, "--json", "--now", &at(dt)],
            None,
        ))
    };
    let written = std::fs::read(dir.join("keyset.json")).expect("keyset");
    assert_eq!(status(0)["ring"], serde_json::json!([first]));
    assert_eq!(status(0)["phase"], 3);
    assert_eq!(
        std::fs::read(dir.join("keyset.json")).expect("keyset"),
        written,
        "an inspection never writes (no seal reservations, no rotation)"
    );

    let mint = |dt: u64| {
        let out = stateseal(
            &[
                "token",
                "mint",
                "--keyset",
                &store,
                "--method",
                "tools/call",
                "--params",
                PARAMS,
                "--state",
                "s",
                "--now",
                &at(dt),
            ],
            None,
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout).trim().to_owned()
    };
    let verify = |token: &str, dt: u64| {
        stateseal(
            &[
                "token",
                "verify",
                "--keyset",
                &store,
                "--method",
                "tools/call",
                "--params",
                PARAMS,
                "--now",
                &at(dt),
                token,
            ],
            None,
        )
    };
    let before = mint(10);

    // Rotate at +100: P = 2R + S = 120, so the new key seals from +220; the old one retires at +220 + 780.
    let rotate = |dt: u64, extra: &[&str]| {
        let now = at(dt);
        let mut args = vec![
            "rotate",
            "--store",
            &store,
            "--now",
            &now,
            "--allow-clock-override",
        ];
        args.extend_from_slice(extra);
        stateseal(&args, None)
    };
    let rot = rotate(100, &[]);
    assert!(rot.status.success(), "{}", text(&rot.stderr));
    assert!(
        text(&rot.stdout).contains("in 2m 0s"),
        "{}",
        text(&rot.stdout)
    );
    let refused = rotate(110, &[]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        text(&refused.stderr).contains("rotation refused, nothing was written: phase 1"),
        "{}",
        text(&refused.stderr)
    );

    let p1 = status(150);
    assert_eq!(p1["phase"], 1);
    assert_eq!(p1["primary"], first.as_str());
    let second = p1["ring"][1].as_str().expect("new kid").to_owned();
    assert_eq!(p1["next_change"]["phase"], 2);
    let p2 = status(230);
    assert_eq!(
        (p2["phase"].clone(), p2["ring"].clone()),
        (serde_json::json!(2), serde_json::json!([second, first]))
    );
    let p3 = status(1000);
    assert_eq!(
        (p3["phase"].clone(), p3["ring"].clone()),
        (serde_json::json!(3), serde_json::json!([second]))
    );

    // A state sealed in phase 1 (old key) opens in phase 2; one sealed in phase 2 uses the new key.
    let in_phase1 = mint(200);
    assert_eq!(verify(&in_phase1, 700).status.code(), Some(0));
    assert_eq!(verify(&before, 300).status.code(), Some(0));
    // Retired: rejected as an unknown key (past the TTL too, but the key goes first).
    let retired = verify(&in_phase1, 1000);
    assert_eq!(retired.status.code(), Some(1));
    assert_eq!(verdict(&retired), "rejected: unknown key");

    // Emergency rotation: everything sealed before it is rejected at once.
    let fresh = mint(1100);
    let emergency = rotate(1200, &["--now-compromise"]);
    assert!(emergency.status.success(), "{}", text(&emergency.stderr));
    assert!(text(&emergency.stdout).contains("This breaks"));
    let after = verify(&fresh, 1201);
    assert_eq!(verdict(&after), "rejected: unknown key");
    assert_eq!(status(1201)["ring"].as_array().expect("ring").len(), 1);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn keyset_errors_say_what_to_fix() {
    let dir = std::env::temp_dir().join(format!("stateseal-cli-kse-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("tmp");
    let store = format!("file://{}", dir.join("keyset.json").display());
    let missing = stateseal(&["status", "--store", &store], None);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        text(&missing.stderr).contains("stateseal init"),
        "{}",
        text(&missing.stderr)
    );
    let scheme = stateseal(
        &["init", "--kek", "oci-kms://vault/keys/x", "--store", &store],
        None,
    );
    assert_eq!(scheme.status.code(), Some(2));
    assert!(
        text(&scheme.stderr)
            .contains("scheme \"oci-kms\" (registered: aws-kms, az-blob, azure-kv, file, gcp-kms, gs, hcvault, local, s3, vault-kv)"),
        "{}",
        text(&scheme.stderr)
    );
    let kek = dir.join("kek.bin");
    let kek_uri = format!("local://{}", kek.display());
    assert!(
        stateseal(&["init", "--kek", &kek_uri, "--store", &store], None)
            .status
            .success()
    );
    // An unreadable KEK: nothing in the document can be verified; status
    // says so, names the cause, and exits 1 (unhealthy).
    std::fs::remove_file(&kek).expect("rm kek");
    let broken = stateseal(&["status", "--store", &store], None);
    assert_eq!(broken.status.code(), Some(1));
    let shown = format!("{}{}", text(&broken.stdout), text(&broken.stderr));
    assert!(
        shown.contains("cannot be verified") && shown.contains("local KMS"),
        "{shown}"
    );
    assert!(!shown.contains("no key ring is loaded"), "{shown}");
    let _ = std::fs::remove_dir_all(dir);
}

/// The main job: a fleet rotates keys under live MCP traffic with zero
/// unexpected rejections and every attack rejected, through all three phases.
#[test]
fn demo_runs_a_rotating_fleet_to_a_clean_summary() {
    let out = stateseal(&["demo", "--json", "--duration", "30"], None);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    // stdout is exactly one JSON object (`stateseal demo --json | jq`); progress is on stderr.
    let last: serde_json::Value = serde_json::from_str(&stdout).expect("stdout is one JSON object");
    assert_eq!(last["unexpected_rejections"], 0, "{stdout}");
    assert_eq!(last["attacks"], last["attacks_rejected"]);
    assert!(last["attacks"].as_u64().expect("attacks") > 100);
    // Single-use transfers replayed on another instance: refused, among the attacks.
    assert!(last["replays"].as_u64().expect("replays") > 10, "{stdout}");
    // bob's state held across his revocation: refused, among the attacks.
    assert_eq!(last["revoked"], 1, "{stdout}");
    assert!(last["rounds"].as_u64().expect("rounds") > 100);
    assert_eq!(last["phases_seen"], serde_json::json!([1, 2, 3]));
    assert!(
        text(&out.stderr).contains("phase 2"),
        "live progress shows the phases"
    );
}

/// The same demo against an operator-given KEK and store (the flags a real provider would use).
#[test]
fn demo_uses_the_given_kek_and_store() {
    let dir = std::env::temp_dir().join(format!("stateseal-cli-demo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("tmp");
    let store = format!("file://{}", dir.join("fleet.json").display());
    let kek = format!("local://{}", dir.join("fleet-kek.bin").display());
    assert!(
        stateseal(&["init", "--kek", &kek, "--store", &store], None)
            .status
            .success()
    );
    let out = stateseal(
        &[
            "demo",
            "--json",
            "--instances",
            "2",
            "--duration",
            "27",
            "--kek",
            &kek,
            "--store",
            &store,
        ],
        None,
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let last: serde_json::Value = serde_json::from_str(&stdout).expect("stdout is one JSON object");
    assert_eq!(
        (
            last["instances"].clone(),
            last["unexpected_rejections"].clone()
        ),
        (serde_json::json!(2), serde_json::json!(0))
    );
    // The rotation went into the given store; both keys are v2 keys, which
    // seal without reserving anything in the keyset.
    let doc = crate::payload_of(&std::fs::read(dir.join("fleet.json")).expect("keyset"));
    let keys = doc["keys"].as_array().expect("keys");
    assert_eq!(keys.len(), 2, "{doc}");
    assert!(
        keys.iter()
            .all(|k| k["alg"] == "v2-xaes-256-gcm" && k.get("seals_reserved").is_none()),
        "{doc}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn simulate_prints_the_capacity_table_and_refuses_bad_input() {
    let out = stateseal(
        &[
            "simulate",
            "--instances",
            "5,10",
            "--store",
            "gcs",
            "--kms",
            "gcp",
            "--days",
            "0.1",
            "--rotation-period",
            "3600",
        ],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    let rows: Vec<&str> = table
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| instances"))
        .collect();
    assert_eq!(rows.len(), 2, "{table}");
    assert!(
        rows[0].starts_with("| 5 |") && rows[1].starts_with("| 10 |"),
        "{table}"
    );
    let out = stateseal(
        &[
            "simulate",
            "--instances",
            "5",
            "--store",
            "vault",
            "--kms",
            "aws",
            "--days",
            "0.1",
            "--rotation-period",
            "3600",
            "--json",
        ],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).expect("json");
    assert_eq!(report["instances"], 5);
    assert_eq!(report["rejected_rounds"], 0);
    assert!(
        report["rotations"]
            .as_array()
            .is_some_and(|r| !r.is_empty()),
        "{report}"
    );
    // Bad input: exit 2 with the reason, nothing on stdout.
    for (args, needle) in [
        (
            vec![
                "simulate",
                "--instances",
                "5",
                "--store",
                "nfs",
                "--kms",
                "aws",
            ],
            "expected gcs, s3 or vault",
        ),
        (
            vec![
                "simulate",
                "--instances",
                "5",
                "--store",
                "gcs",
                "--kms",
                "hsm",
            ],
            "expected aws, gcp or vault",
        ),
        (
            vec![
                "simulate",
                "--instances",
                "0",
                "--store",
                "gcs",
                "--kms",
                "aws",
            ],
            "instances must be between",
        ),
        (
            vec![
                "simulate",
                "--instances",
                "5",
                "--store",
                "gcs",
                "--kms",
                "aws",
                "--rotation-period",
                "60",
            ],
            "rotation_period must be longer",
        ),
    ] {
        let out = stateseal(&args, None);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains(needle),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// A `local://` KEK is for a development keyset in a `file://` store: for a
/// shared store `init` refuses it (exit 2, naming the opt-in) before any
/// request or file is made; with STATESEAL_ALLOW_LOCAL_KEK=1 it goes on to the
/// store (here an unresolvable host, so it fails there instead).
#[test]
fn init_refuses_a_local_kek_for_a_shared_store_unless_opted_in() {
    let dir = scratch("local-kek-shared");
    let kek_path = dir.join("kek.bin");
    let kek = format!("local://{}", kek_path.display());
    let args = [
        "init",
        "--kek",
        &kek,
        "--store",
        "vault-kv://secret/stateseal/keyset",
    ];
    let vault = [
        ("VAULT_ADDR", "https://vault.invalid:8200"),
        ("VAULT_TOKEN", "not-a-token"),
    ];
    let refused = stateseal_with(&args, &vault, None);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    let e = text(&refused.stderr);
    assert!(
        e.contains("local:// KEKs are for development keysets in a file:// store")
            && e.contains("STATESEAL_ALLOW_LOCAL_KEK=1"),
        "{e}"
    );
    assert!(!e.contains("not-a-token"), "{e}");
    assert!(!kek_path.exists(), "a KEK file was created");
    let mut opted: Vec<(&str, &str)> = vault.to_vec();
    opted.push(("STATESEAL_ALLOW_LOCAL_KEK", "1"));
    let past = stateseal_with(&args, &opted, None);
    assert_ne!(past.status.code(), Some(0));
    let e = text(&past.stderr);
    assert!(!e.contains("file:// store"), "{e}");
    assert!(e.contains("vault.invalid"), "{e}");
    assert!(!kek_path.exists(), "a KEK file was created");
}
