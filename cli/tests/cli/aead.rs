//! The AES-256-GCM backend: `stateseal bench --compare` shows every backend
//! and the chosen one; `STATESEAL_AEAD` sets it, and a bad value stops any
//! command before it does anything.

use crate::{stateseal, stateseal_with, text};

fn json_lines(out: &[u8]) -> Vec<serde_json::Value> {
    text(out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect()
}

#[test]
fn bench_compare_measures_every_backend_and_marks_the_chosen_one() {
    let args = [
        "bench",
        "--compare",
        "--json",
        "--sizes",
        "64,1024",
        "--millis",
        "5",
    ];
    for (setting, chosen) in [("aws-lc", "aws-lc"), ("ring", "ring"), ("split", "split")] {
        let out = stateseal_with(&args, &[("STATESEAL_AEAD", setting)], None);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let lines = json_lines(&out.stdout);
        assert_eq!(lines.len(), 6, "two sizes x three backends");
        for size in [64, 1024] {
            let rows: Vec<_> = lines.iter().filter(|l| l["state_bytes"] == size).collect();
            let names: Vec<_> = rows
                .iter()
                .map(|l| l["backend"].as_str().unwrap())
                .collect();
            assert_eq!(names, ["aws-lc", "ring", "split"]);
            let marked: Vec<_> = rows.iter().filter(|l| l["chosen"] == true).collect();
            assert_eq!(marked.len(), 1);
            assert_eq!(marked[0]["backend"], chosen);
            // The chosen backend's round against itself, round by round.
            assert_eq!(marked[0]["round_ratio_to_chosen"], 1.0);
            for l in &rows {
                for field in ["aead_seal_ns", "aead_open_ns", "round_ns", "round_v2_ns"] {
                    assert!(l[field].as_f64().unwrap() > 0.0, "{field}: {l}");
                }
                // The round includes the AEAD: never cheaper than sealing alone.
                assert!(l["round_ns"].as_f64().unwrap() > l["aead_seal_ns"].as_f64().unwrap());
            }
            // Exactly one backend is the CPU's own choice.
            assert_eq!(rows.iter().filter(|l| l["cpu_choice"] == true).count(), 1);
        }
    }
    let table = stateseal(
        &["bench", "--compare", "--sizes", "64", "--millis", "5"],
        None,
    );
    assert!(table.status.success(), "{}", text(&table.stderr));
    let table = text(&table.stdout);
    assert!(table.starts_with("AES-256-GCM backend chosen: "), "{table}");
    assert!(
        table.contains("aws-lc") && table.contains("ring"),
        "{table}"
    );
    assert_eq!(table.matches(" *").count(), 1, "{table}");
}

#[test]
fn the_plain_bench_says_which_backend_it_measured() {
    let out = stateseal_with(
        &["bench", "--json", "--sizes", "64", "--millis", "5"],
        &[("STATESEAL_AEAD", "ring")],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let round = json_lines(&out.stdout)
        .into_iter()
        .find(|l| l["op"] == "round")
        .expect("round");
    assert_eq!(round["aead"], "ring");
}

#[test]
fn a_bad_aead_setting_stops_the_command_and_changes_nothing() {
    let dir = std::env::temp_dir().join(format!("stateseal-cli-aead-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("tmp");
    let store = format!("file://{}", dir.join("keyset.json").display());
    let kek = format!("local://{}", dir.join("kek.bin").display());
    for json in [false, true] {
        let mut args = vec!["init", "--kek", &kek, "--store", &store];
        if json {
            args.push("--json");
        }
        let out = stateseal_with(&args, &[("STATESEAL_AEAD", "openssl")], None);
        assert_eq!(out.status.code(), Some(2));
        let said = if json {
            text(&out.stdout)
        } else {
            text(&out.stderr)
        };
        assert!(said.contains("STATESEAL_AEAD"), "{said}");
        assert!(
            said.contains("expected auto, aws-lc, ring or split"),
            "{said}"
        );
        if json {
            let e: serde_json::Value = serde_json::from_str(said.trim()).expect("json error");
            assert_eq!(e["exit_code"], 2);
        }
    }
    // Nothing was written: no keyset, no KEK.
    assert!(std::fs::read_dir(&dir).expect("dir").next().is_none());
    // The same command with a valid setting works and seals with it.
    let out = stateseal_with(
        &["init", "--kek", &kek, "--store", &store],
        &[("STATESEAL_AEAD", "ring")],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(dir.join("keyset.json").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
