//! `stateseal bench` and `stateseal demo`: the benchmark's JSON lines, and the
//! demo's fleet rotating under live traffic to a clean summary.

use crate::{stateseal, text};

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
            "round_v2_loop",
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
    assert!(lines[7]["ratio_to_raw"].as_f64().expect("bound") > 1.0);
    // The v2 rounds are measured against the v1 round of the same run.
    assert!(lines[4]["ratio_to_v1_round"].as_f64().expect("v2 ratio") > 0.0);
    assert!(lines[6]["ratio_to_v1_round"].as_f64().expect("cold ratio") > 0.0);
    // The loop does the round's work, so it costs about what its parts do.
    assert!(lines[5]["ratio_to_round_v2"].as_f64().expect("loop ratio") > 0.5);
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
