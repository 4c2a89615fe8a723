//! `stateseal init`, `rotate`, `status` and the keyset's token commands on a
//! file store: the three phases walked through, and errors that say what to fix.

use crate::commands::PARAMS;
use crate::{json_of, scratch, stateseal, stateseal_with, text, verdict};

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
