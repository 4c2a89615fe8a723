//! `stateseal simulate`: its flags (names checked by outside tooling), its
//! JSON figures, and bad flag values refused with exit 2 naming the flag.

use crate::{stateseal, text};

fn simulate_json(extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "simulate",
        "--instances",
        "40",
        "--store",
        "gcs",
        "--kms",
        "gcp",
        "--days",
        "0.1",
        "--rotation-period",
        "3600",
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = stateseal(&args, None);
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    // The simulated servers' warnings are figures, not the command's output.
    assert!(out.stderr.is_empty(), "{args:?}: {}", text(&out.stderr));
    serde_json::from_str(text(&out.stdout).trim()).expect("one JSON object")
}

#[test]
fn simulate_reports_every_figure_that_can_go_wrong() {
    let r = simulate_json(&[]);
    assert_eq!(r["topology"], "rotator", "deploy/'s topology by default");
    for (figure, want) in [
        ("/rejected_rounds", 0),
        ("/refused_to_start", 0),
        ("/kms/throttled", 0),
        ("/kms/denied", 0),
        ("/store_writes/throttled", 0),
        ("/store_writes/conflicted", 0),
        ("/store_reads/throttled", 0),
        ("/startup_exits", 0),
        ("/instances_past_ready_timeout", 0),
    ] {
        assert_eq!(r.pointer(figure), Some(&want.into()), "{figure}: {r}");
    }
    assert_eq!(r["cold_start_within_ready_timeout"], true, "{r}");
    assert_eq!(
        r["kms"]["quota_per_s"], 1000,
        "Cloud KMS: 60,000 a minute, per second"
    );
    assert!(
        r["rotations"].as_array().is_some_and(|a| !a.is_empty()),
        "{r}"
    );
}

#[test]
fn simulate_flags_change_the_fleet() {
    // A quota far below a cold start's: throttled, servers exit at ready_timeout.
    let starved = simulate_json(&["--kms-quota", "5"]);
    assert!(starved["kms"]["throttled"].as_u64() > Some(0), "{starved}");
    assert!(starved["startup_exits"].as_u64() > Some(0), "{starved}");
    assert_eq!(starved["cold_start_within_ready_timeout"], false);
    // Clocks further apart than S: rounds rejected.
    let skewed = simulate_json(&["--clock-skew", "600", "--topology", "servers"]);
    assert_eq!(skewed["topology"], "servers");
    assert_eq!(skewed["clock_skew_s"], 600.0);
    assert!(skewed["rejected_rounds"].as_u64() > Some(0), "{skewed}");
    // A rotator job denied generate-data-key: its runs fail, reported.
    let failing = simulate_json(&["--failing-rotators", "1", "--start-spread", "30"]);
    assert!(failing["kms"]["denied"].as_u64() > Some(0), "{failing}");
    assert!(failing["rotator"]["failed"].as_u64() > Some(0), "{failing}");
}

#[test]
fn simulate_refuses_bad_flag_values_naming_the_flag() {
    let mut transcript = String::new();
    for (flag, value) in [
        ("--kms-quota", "0"),
        ("--kms-quota", "lots"),
        ("--clock-skew", "-5"),
        ("--clock-skew", "100000"),
        ("--start-spread", "soon"),
        ("--topology", "mesh"),
        ("--failing-rotators", "-1"),
    ] {
        let arg = format!("{flag}={value}");
        let out = stateseal(
            &[
                "simulate",
                "--instances",
                "5",
                "--store",
                "gcs",
                "--kms",
                "gcp",
                &arg,
            ],
            None,
        );
        assert_eq!(out.status.code(), Some(2), "{arg}");
        assert!(out.stdout.is_empty(), "{arg}");
        let stderr = text(&out.stderr);
        assert!(stderr.contains(flag), "{arg}: {stderr}");
        transcript.push_str(&format!("$ stateseal simulate … {arg}\nexit 2\n{stderr}\n"));
    }
    insta::assert_snapshot!("simulate_bad_flag_values", transcript);
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
