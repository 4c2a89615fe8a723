//! The operator's keyset commands (init, rotate, status, check, keyset show):
//! what they tell and write, outputs snapshot-tested, and the kit the
//! operator tests share (a scratch keyset, `--now` at a fixed time). Inputs
//! and bad input: `operator_inputs`.

use std::path::PathBuf;

use assert_cmd::Command;
use serde_json::Value;

use crate::scratch;

/// 2026-06-25T00:00:00Z: far from any test machine's clock, so every writing
/// command here also proves `--allow-clock-override` is what lets it through.
pub(crate) const T0: f64 = 1_782_345_600.0;

/// A scratch keyset: its directory, store URI and KEK URI.
pub(crate) struct Ks {
    pub(crate) dir: PathBuf,
    pub(crate) store: String,
    pub(crate) kek: String,
}

impl Ks {
    pub(crate) fn new(name: &str) -> Self {
        let dir = scratch(name);
        Self {
            store: format!("file://{}", dir.join("keyset.json").display()),
            kek: format!("local://{}", dir.join("kek.bin").display()),
            dir,
        }
    }

    pub(crate) fn path(&self) -> PathBuf {
        self.dir.join("keyset.json")
    }

    /// The keyset file's bytes (empty when absent).
    pub(crate) fn bytes(&self) -> Vec<u8> {
        std::fs::read(self.path()).unwrap_or_default()
    }

    pub(crate) fn init(&self) -> Value {
        let out = cli()
            .args(["init", "--kek", &self.kek, "--store", &self.store, "--json"])
            .args(at(0.0))
            .output()
            .expect("run");
        assert!(out.status.success(), "{}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).expect("json")
    }

    /// `stateseal <args> --store STORE` at T0 + `dt` (`None`: no `--now`).
    pub(crate) fn run(&self, args: &[&str], dt: impl Into<Option<f64>>) -> std::process::Output {
        let mut c = cli();
        c.args(args).args(["--store", &self.store]);
        if let Some(dt) = dt.into() {
            c.args(["--now", &(T0 + dt).to_string()]);
            // Only writing commands guard --now against the system clock.
            if matches!(args.first(), Some(&"rotate" | &"init")) {
                c.arg("--allow-clock-override");
            }
        }
        c.output().expect("run")
    }

    /// Runs a command that must be refused: checks the exit code, that the
    /// message names `hint`, and that the keyset's bytes did not change.
    pub(crate) fn refused(
        &self,
        args: &[&str],
        dt: impl Into<Option<f64>>,
        code: i32,
        hint: &str,
    ) -> String {
        let before = self.bytes();
        let out = self.run(args, dt);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(hint), "{args:?}: expected {hint:?} in: {err}");
        assert_eq!(self.bytes(), before, "{args:?} changed the keyset");
        err
    }
}

/// The `stateseal` binary with no environment defaults leaking in.
pub(crate) fn cli() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_stateseal"));
    c.env_remove("STATESEAL_STORE").env_remove("STATESEAL_KEK");
    c
}

/// `--now T0+dt --allow-clock-override`.
pub(crate) fn at(dt: f64) -> Vec<String> {
    vec![
        "--now".into(),
        (T0 + dt).to_string(),
        "--allow-clock-override".into(),
    ]
}

pub(crate) fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

pub(crate) fn json(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&out.stdout), text(&out.stderr)))
}

/// Snapshot settings: random ids and scratch paths replaced by placeholders.
fn redactions(ks: &Ks) -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.add_filter(&regex_escape(&ks.dir.display().to_string()), "[dir]");
    s.add_filter(r"ks_[0-9a-f]{24}", "ks_[id]");
    s.add_filter(r"k_[0-9a-f]{24}", "k_[entry]");
    s.add_filter(r"\b[0-9a-f]{8}\b", "[kid]");
    s.add_filter(r#""wrapped": "[^"]+""#, r#""wrapped": "[wrapped]""#);
    s
}

fn regex_escape(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '/' || c == '_' {
                c.to_string()
            } else {
                format!("\\{c}")
            }
        })
        .collect()
}

#[test]
fn status_show_and_check_tell_the_timeline_and_snapshot_it() {
    let ks = Ks::new("op-status");
    let init = ks.init();
    let first = init["kid"].as_str().expect("kid").to_owned();
    assert_eq!(init["timing"]["state_ttl"], 600.0);
    assert_eq!(init["created_at_rfc3339"], "2026-06-25T00:00:00Z");
    let rot = ks.run(&["rotate", "--json"], 100.0);
    assert!(rot.status.success(), "{}", text(&rot.stderr));
    let rot = json(&rot);
    assert_eq!(rot["activate_at_rfc3339"], "2026-06-25T00:03:40Z");
    let second = rot["kid"].as_str().expect("kid").to_owned();

    let status = ks.run(&["status"], 150.0);
    assert_eq!(status.status.code(), Some(0));
    let status_json = json(&ks.run(&["status", "--json"], 150.0));
    assert_eq!(status_json["ring"], serde_json::json!([first, second]));
    assert_eq!(status_json["keys"][1]["role"], "pending");
    assert_eq!(status_json["keys"][1]["available"], true);
    assert_eq!(
        status_json["next_change"]["at_rfc3339"],
        "2026-06-25T00:03:40Z"
    );
    let check = ks.run(&["check"], 150.0);
    assert_eq!(check.status.code(), Some(0), "{}", text(&check.stdout));
    let show = ks.run(&["keyset", "show"], 150.0);
    assert_eq!(show.status.code(), Some(0));
    redactions(&ks).bind(|| {
        insta::assert_snapshot!("status_phase1", text(&status.stdout));
        insta::assert_snapshot!(
            "status_phase1_json",
            serde_json::to_string_pretty(&status_json).expect("json")
        );
        insta::assert_snapshot!("check_healthy", text(&check.stdout));
        insta::assert_snapshot!("keyset_show", text(&show.stdout));
    });
}

#[test]
fn an_unavailable_key_is_named_and_status_and_check_exit_1() {
    let ks = Ks::new("op-unavailable");
    ks.init();
    let kek = ks.dir.join("kek.bin");
    let good_kek = std::fs::read(&kek).expect("kek");
    let mut perms = std::fs::metadata(&kek).expect("kek").permissions();
    std::fs::remove_file(&kek).expect("rm kek");
    let before = ks.bytes();
    // Without the KEK the document's tag cannot be checked, so nothing in it
    // is shown as true: status and show answer "unhealthy" (1) and say why.
    for args in [&["status", "--json"][..], &["keyset", "show", "--json"]] {
        let out = ks.run(args, 10.0);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let v = json(&out);
        assert_eq!(v["exit_code"], 1);
        let why = v["error"].as_str().expect("error");
        assert!(
            why.contains("cannot be verified")
                && why.contains("KEK file")
                && why.contains("unreadable"),
            "{why}"
        );
    }
    let check = ks.run(&["check", "--json"], 10.0);
    assert_eq!(check.status.code(), Some(1));
    let c = json(&check);
    assert_eq!(c["healthy"], false);
    assert!(
        c["problems"][0]
            .as_str()
            .expect("problem")
            .contains("KEK file"),
        "{c}"
    );
    assert_eq!(ks.bytes(), before, "inspections never write");
    // The KEK back: healthy again.
    std::fs::write(&kek, &good_kek).expect("restore kek");
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o600);
    std::fs::set_permissions(&kek, perms).expect("private");
    let healthy = ks.run(&["status"], 10.0);
    assert_eq!(healthy.status.code(), Some(0), "{}", text(&healthy.stderr));
    // Check with no keyset at all, and with a bad flag: 1 and 2.
    let empty = Ks::new("op-empty");
    let none = empty.run(&["check"], 0.0);
    assert_eq!(none.status.code(), Some(1));
    assert!(text(&none.stdout).contains("stateseal init"));
    let usage = cli()
        .args(["check", "--store", "file://relative.json"])
        .output()
        .expect("run");
    assert_eq!(usage.status.code(), Some(2));
}

#[test]
fn rotate_proves_its_keys_before_it_writes() {
    let ks = Ks::new("op-proofs");
    ks.init();
    let original = ks.bytes();
    // A wrong KEK file at the same path.
    let kek = ks.dir.join("kek.bin");
    let good_kek = std::fs::read(&kek).expect("kek");
    std::fs::write(&kek, [0x5a; 32]).expect("swap kek");
    let err = ks.refused(&["rotate"], 100.0, 1, "does not unwrap");
    assert!(err.contains("nothing was written"), "{err}");
    std::fs::write(&kek, &good_kek).expect("restore kek");
    // A tampered wrapped key (under the tag), and an edited keyset id (which
    // the MAC key's wrap is bound to): refused before anything is planned.
    let tampered = crate::with_payload_edit(&original, |p| {
        let wrapped = p["keys"][0]["wrapped"]
            .as_str()
            .expect("wrapped")
            .to_owned();
        let flipped = if wrapped.starts_with('A') { "B" } else { "A" };
        p["keys"][0]["wrapped"] = format!("{flipped}{}", &wrapped[1..]).into();
    });
    let mut moved: Value = serde_json::from_slice(&original).expect("doc");
    moved["id"] = "ks_000000000000000000000000".into();
    for (bad, says) in [
        (tampered, "the tag does not verify"),
        (moved, "does not unwrap"),
    ] {
        std::fs::write(ks.path(), serde_json::to_vec_pretty(&bad).expect("doc")).expect("write");
        for args in [&["rotate"][..], &["rotate", "--dry-run"]] {
            let err = ks.refused(args, 100.0, 1, "refused (mac)");
            assert!(
                err.contains(says) && err.contains("nothing was written"),
                "{err}"
            );
        }
    }
    std::fs::write(ks.path(), &original).expect("restore doc");
    // A dry run proves the same and writes nothing.
    let dry = ks.run(&["rotate", "--dry-run", "--json"], 100.0);
    assert_eq!(dry.status.code(), Some(0), "{}", text(&dry.stderr));
    assert_eq!(json(&dry)["dry_run"], true);
    assert_eq!(ks.bytes(), original, "a dry run writes nothing");
}

#[test]
fn forced_rotations_are_bounded_and_retired_entries_pruned() {
    let ks = Ks::new("op-forced");
    ks.init();
    assert!(ks.run(&["rotate"], 10.0).status.success());
    assert!(ks.run(&["rotate", "--force"], 20.0).status.success());
    assert!(ks.run(&["rotate", "--force"], 30.0).status.success());
    // Four keys unseal now: a fifth is refused unless allowed.
    ks.refused(&["rotate", "--force"], 40.0, 1, "limit is 4");
    let more = ks.run(
        &["rotate", "--force", "--max-live-keys", "5", "--json"],
        40.0,
    );
    assert!(more.status.success(), "{}", text(&more.stderr));
    ks.refused(
        &["rotate", "--force", "--max-live-keys", "1"],
        40.0,
        2,
        "at least 2",
    );
    // Long after everything settled, the next rotation drops the retired entries.
    let later = json(&ks.run(&["rotate", "--json"], 100_000.0));
    assert_eq!(
        later["pruned"].as_array().expect("pruned").len(),
        4,
        "{later}"
    );
    let doc = crate::payload_of(&ks.bytes());
    assert_eq!(doc["keys"].as_array().expect("keys").len(), 2);
}

#[test]
fn emergency_rotation_names_the_new_key_and_generation() {
    let ks = Ks::new("op-emergency");
    ks.init();
    let out = ks.run(&["rotate", "--now-compromise"], 50.0);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    // An operator's write carries a generation of at least its Unix time, and
    // the operator is told to make it the fleet's minimum.
    let generation = (T0 + 50.0) as u64;
    assert!(
        said.contains(&format!("generation {generation}"))
            && said.contains("new key")
            && said.contains(&format!("Raise min_generation to {generation}")),
        "{said}"
    );
    let status = json(&ks.run(&["status", "--json"], 51.0));
    let kid = status["primary"].as_str().expect("primary");
    assert!(said.contains(kid), "{said}");
    assert_eq!(status["ring"].as_array().expect("ring").len(), 1);
}

#[test]
fn help_ends_with_examples_and_completions_are_generated() {
    for args in [
        &["--help"][..],
        &["init", "--help"],
        &["rotate", "--help"],
        &["revoke", "--help"],
        &["status", "--help"],
        &["check", "--help"],
        &["keyset", "show", "--help"],
        &["token", "inspect", "--help"],
        &["token", "verify", "--help"],
        &["token", "mint", "--help"],
        &["token", "seal", "--help"],
        &["token", "open", "--help"],
        &["bench", "--help"],
        &["demo", "--help"],
        &["completions", "--help"],
    ] {
        let out = cli().args(args).output().expect("run");
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        let help = text(&out.stdout);
        assert!(help.contains("Example"), "{args:?}: {help}");
    }
    let rotate_help = text(
        &cli()
            .args(["rotate", "--help"])
            .output()
            .expect("run")
            .stdout,
    );
    insta::assert_snapshot!("rotate_help", rotate_help);
    for shell in ["bash", "zsh", "fish"] {
        let out = cli().args(["completions", shell]).output().expect("run");
        assert!(out.status.success());
        assert!(text(&out.stdout).contains("keyset"), "{shell}");
    }
}
