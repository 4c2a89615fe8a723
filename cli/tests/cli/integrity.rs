//! The CLI and authenticated keysets: a document written by the previous
//! release (`stateseal.keyset/v1`) is refused until `keyset upgrade` converts
//! it, with its keys unchanged; `keyset renew` makes a stale document fresh
//! only when the operator names its generation; pins are checked first.

use serde_json::Value;

use crate::operator::{Ks, cli};
use crate::{payload_of, text};

const T0: f64 = 1_782_345_600.0;

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

/// The keyset `ks` holds, rewritten as the previous release wrote it: the
/// same entries (no key ids recorded), no tag, no expiry.
fn as_previous_release(ks: &Ks) -> Value {
    let mut doc = payload_of(&ks.bytes());
    let obj = doc.as_object_mut().expect("payload");
    obj.remove("expires_at");
    obj.insert("format".into(), "stateseal.keyset/v1".into());
    for k in doc["keys"].as_array_mut().expect("keys") {
        let k = k.as_object_mut().expect("entry");
        k.remove("alg");
        k.remove("kid");
    }
    std::fs::write(ks.path(), serde_json::to_vec_pretty(&doc).expect("json")).expect("write");
    doc
}

#[test]
fn a_previous_release_keyset_is_refused_until_upgraded_and_keeps_its_keys() {
    let ks = Ks::new("int-upgrade");
    ks.init();
    let v1 = as_previous_release(&ks);
    let before = ks.bytes();
    // Refused, naming the way out; accepted with the migration flag, flagged.
    let refused = look(&ks, &["status"], 10.0);
    assert_eq!(refused.status.code(), Some(1));
    let err = text(&refused.stderr);
    assert!(
        err.contains("refused (unauthenticated)") && err.contains("keyset upgrade"),
        "{err}"
    );
    let accepted = look(&ks, &["status", "--accept-unauthenticated"], 10.0);
    assert_eq!(
        accepted.status.code(),
        Some(0),
        "{}",
        text(&accepted.stderr)
    );
    assert!(text(&accepted.stdout).contains("UNAUTHENTICATED"));
    let check = look(&ks, &["check", "--accept-unauthenticated", "--json"], 10.0);
    let c: Value = serde_json::from_slice(&check.stdout).expect("json");
    assert!(c["notes"].to_string().contains("unauthenticated"), "{c}");
    // Nothing writes it in the meantime: a rotation says to upgrade first.
    let rotate = run(&ks, &["rotate", "--accept-unauthenticated"], 10.0);
    assert_eq!(rotate.status.code(), Some(2), "{}", text(&rotate.stderr));
    assert!(text(&rotate.stderr).contains("keyset upgrade"));
    assert_eq!(ks.bytes(), before, "refusals write nothing");

    // The upgrade: every key proven, the same entries under a tag.
    let up = run(&ks, &["keyset", "upgrade", "--json"], 20.0);
    assert_eq!(up.status.code(), Some(0), "{}", text(&up.stderr));
    let said: Value = serde_json::from_slice(&up.stdout).expect("json");
    assert_eq!(said["mac_kek"], ks.kek.as_str());
    let doc = payload_of(&ks.bytes());
    for (old, new) in v1["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .zip(doc["keys"].as_array().expect("keys"))
    {
        for field in [
            "entry",
            "kek",
            "wrapped",
            "activate_at",
            "retire_at",
            "seals_reserved",
        ] {
            assert_eq!(old[field], new[field], "{field} changed");
        }
        assert!(new["kid"].is_string(), "the key id is recorded");
    }
    assert_eq!(doc["id"], v1["id"]);
    assert_eq!(doc["timing"], v1["timing"]);
    let ok = look(&ks, &["status"], 30.0);
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    assert!(text(&ok.stdout).contains("authenticated (MAC key under"));
    // One way: a second upgrade is refused and writes nothing.
    let after = ks.bytes();
    let again = run(&ks, &["keyset", "upgrade"], 40.0);
    assert_eq!(again.status.code(), Some(1));
    assert!(text(&again.stderr).contains("already an authenticated"));
    assert_eq!(ks.bytes(), after);
}

#[test]
fn an_upgrade_proves_every_key_and_honours_the_pins() {
    let ks = Ks::new("int-upgrade-bad");
    let created = ks.init();
    let mut v1 = as_previous_release(&ks);
    let good_v1 = ks.bytes();
    // A wrapped key altered in the unauthenticated document: the upgrade refuses, naming it.
    let wrapped = v1["keys"][0]["wrapped"]
        .as_str()
        .expect("wrapped")
        .to_owned();
    let flipped = if wrapped.starts_with('A') { "B" } else { "A" };
    v1["keys"][0]["wrapped"] = format!("{flipped}{}", &wrapped[1..]).into();
    std::fs::write(ks.path(), serde_json::to_vec_pretty(&v1).expect("json")).expect("write");
    let before = ks.bytes();
    let bad = run(&ks, &["keyset", "upgrade"], 10.0);
    assert_eq!(bad.status.code(), Some(1), "{}", text(&bad.stderr));
    let entry = v1["keys"][0]["entry"].as_str().expect("entry");
    assert!(
        text(&bad.stderr).contains(entry) && text(&bad.stderr).contains("nothing was written"),
        "{}",
        text(&bad.stderr)
    );
    assert_eq!(ks.bytes(), before);
    // Pinned to another keyset, or a MAC KEK outside the pins: refused, nothing written.
    std::fs::write(ks.path(), &good_v1).expect("restore");
    let before = ks.bytes();
    let id = created["keyset"].as_str().expect("id");
    let other = run(
        &ks,
        &[
            "keyset",
            "upgrade",
            "--keyset-id",
            "ks_someoneelse",
            "--kek-pin",
            &ks.kek,
        ],
        10.0,
    );
    assert_eq!(other.status.code(), Some(1));
    assert!(
        text(&other.stderr).contains("refused (other_keyset)"),
        "{}",
        text(&other.stderr)
    );
    let elsewhere = format!("local://{}", ks.dir.join("other-kek.bin").display());
    let unpinned = run(
        &ks,
        &[
            "keyset",
            "upgrade",
            "--keyset-id",
            id,
            "--kek-pin",
            &ks.kek,
            "--mac-kek",
            &elsewhere,
        ],
        10.0,
    );
    assert_eq!(unpinned.status.code(), Some(1));
    assert!(text(&unpinned.stderr).contains("not among the pinned KEKs"));
    assert_eq!(ks.bytes(), before);
}

#[test]
fn renew_makes_a_stale_document_fresh_only_for_the_named_generation() {
    let ks = Ks::new("int-renew");
    ks.init();
    let week = 7.0 * 86_400.0;
    // Past its expiry the document is refused by name, and rotations refuse to build on it.
    let stale = look(&ks, &["status"], week + 10.0);
    assert_eq!(stale.status.code(), Some(1));
    assert!(
        text(&stale.stderr).contains("refused (expired)"),
        "{}",
        text(&stale.stderr)
    );
    let before = ks.bytes();
    let rotate = run(&ks, &["rotate"], week + 10.0);
    assert_eq!(rotate.status.code(), Some(1));
    assert!(text(&rotate.stderr).contains("nothing was written"));
    // The operator names the generation they renew; another is refused.
    let wrong = run(&ks, &["keyset", "renew", "--generation", "7"], week + 20.0);
    assert_eq!(wrong.status.code(), Some(1));
    assert!(
        text(&wrong.stderr).contains("holds generation 1, not 7"),
        "{}",
        text(&wrong.stderr)
    );
    assert_eq!(ks.bytes(), before);
    let renewed = run(
        &ks,
        &["keyset", "renew", "--generation", "1", "--json"],
        week + 20.0,
    );
    assert_eq!(renewed.status.code(), Some(0), "{}", text(&renewed.stderr));
    let said: Value = serde_json::from_slice(&renewed.stdout).expect("json");
    assert_eq!(said["expires_at"], T0 + 2.0 * week + 20.0);
    let fresh = look(&ks, &["status"], week + 30.0);
    assert_eq!(fresh.status.code(), Some(0), "{}", text(&fresh.stderr));
    // Nothing but the generation and the expiry changed.
    let (a, b) = (payload_of(&before), payload_of(&ks.bytes()));
    assert_eq!(a["keys"], b["keys"]);
    assert_eq!(a["timing"], b["timing"]);
}

#[test]
fn a_shared_store_needs_pins_and_a_minimum_generation_refuses_older_documents() {
    // Pins are required for every store but file:// (checked before the store is read).
    let out = cli()
        .args(["status", "--store", "s3://bucket/keyset.json"])
        .env_remove("STATESEAL_KEYSET_ID")
        .env_remove("STATESEAL_KEYSET_KEKS")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--keyset-id and --kek-pin"),
        "{}",
        text(&out.stderr)
    );
    for (args, says) in [
        (&["--keyset-id", "ks_a"][..], "keyset_keks is required"),
        (&["--kek-pin", "local:///k"][..], "keyset_id is required"),
        (
            &["--keyset-id", "nope", "--kek-pin", "local:///k"][..],
            "not a keyset id",
        ),
        (
            &["--keyset-id", "ks_a", "--kek-pin", "local:///a/../b"][..],
            "dot segments",
        ),
    ] {
        let ks = Ks::new("int-pins");
        ks.init();
        let mut all = vec!["status"];
        all.extend_from_slice(args);
        let out = look(&ks, &all, 1.0);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains(says),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    let ks = Ks::new("int-min");
    ks.init();
    let below = look(&ks, &["status", "--min-generation", "2"], 1.0);
    assert_eq!(below.status.code(), Some(1));
    assert!(text(&below.stderr).contains("refused (below_min_generation)"));
}

#[test]
fn rotate_if_due_rotates_renews_or_does_nothing() {
    let ks = Ks::new("int-if-due");
    ks.init();
    let day = 86_400.0;
    let json = |out: &std::process::Output| -> Value {
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).expect("json")
    };
    // A day in: nothing due, nothing written.
    let before = ks.bytes();
    let none = json(&run(&ks, &["rotate", "--if-due", "--json"], day));
    assert_eq!(none["action"], "none");
    assert_eq!(ks.bytes(), before);
    // Four days in: less than half the validity left, so renewed (no new key).
    let renewed = json(&run(&ks, &["rotate", "--if-due", "--json"], 4.0 * day));
    assert_eq!(renewed["action"], "renewed");
    assert_eq!(renewed["expires_at"], T0 + 11.0 * day);
    assert_eq!(
        payload_of(&before)["keys"],
        payload_of(&ks.bytes())["keys"],
        "a renewal changes no key"
    );
    // Past the rotation period (here 5 days): rotated, and it says why.
    let rotated = run(
        &ks,
        &[
            "rotate",
            "--if-due",
            "--rotation-period",
            "432000",
            "--json",
        ],
        5.0 * day + 1.0,
    );
    let r = json(&rotated);
    assert_eq!(r["action"], "rotated");
    assert!(
        text(&rotated.stderr).contains("rotation due"),
        "{}",
        text(&rotated.stderr)
    );
    assert_eq!(
        payload_of(&ks.bytes())["keys"]
            .as_array()
            .expect("keys")
            .len(),
        2
    );
    // In flight now: nothing more is due.
    let again = json(&run(
        &ks,
        &[
            "rotate",
            "--if-due",
            "--rotation-period",
            "432000",
            "--json",
        ],
        5.0 * day + 10.0,
    ));
    assert_eq!(again["action"], "none");
    // Flags that would contradict it are refused.
    let bad = run(&ks, &["rotate", "--if-due", "--force"], 5.0 * day + 20.0);
    assert_eq!(bad.status.code(), Some(2));
}

/// An operator who restored an older backup is told, before anything is
/// written, that the running fleet would refuse a rotation or renewal built
/// on it (exit 1, naming the copy that remembers the newest write and the
/// ways out); an emergency rotation on it is written.
#[test]
fn writes_on_a_restored_backup_are_refused_unless_they_retire_it() {
    let ks = Ks::new("int-restored");
    ks.init();
    let backup = ks.bytes();
    for dt in [10.0, 2000.0] {
        let out = run(&ks, &["rotate"], dt);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let newest = ks.bytes();
    std::fs::write(ks.path(), &backup).expect("restore");
    let copy = format!("{}.newest", ks.store);
    let day = 86_400.0;
    for (args, dt) in [
        (vec!["rotate"], 3000.0),
        (vec!["rotate", "--if-due"], 4.0 * day),
        (vec!["keyset", "renew", "--generation", "1"], 3000.0),
    ] {
        let out = run(&ks, &args, dt);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("restored backup")
                && err.contains(&copy)
                && err.contains("pruned_returned")
                && err.contains("--now-compromise"),
            "{args:?}: {err}"
        );
        assert_eq!(ks.bytes(), backup, "{args:?}: nothing written");
    }
    assert_eq!(
        std::fs::read(ks.path().with_extension("json.newest")).expect("copy"),
        newest,
        "the copy is untouched"
    );
    let out = run(&ks, &["rotate", "--now-compromise", "--json"], 3100.0);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let written: Value = serde_json::from_slice(&out.stdout).expect("json");
    let newest_generation = payload_of(&newest)["generation"].as_u64().expect("gen");
    assert!(
        written["generation"].as_u64() > Some(newest_generation),
        "{written}"
    );
}
