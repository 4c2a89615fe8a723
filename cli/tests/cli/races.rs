//! Writers that race or die: concurrent `rotate` processes on one keyset, and
//! `rotate` killed with SIGKILL mid-write. The keyset must stay valid, never go
//! back a generation, and account for every rotation that said it was written.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::operator::Ks;

fn generation(ks: &Ks) -> u64 {
    let doc: Value = serde_json::from_slice(&ks.bytes()).expect("the keyset is always valid JSON");
    doc["generation"].as_u64().expect("generation")
}

fn show_ok(ks: &Ks) {
    let out = ks.run(&["keyset", "show", "--json"], 0.0);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn rotate_cmd(ks: &Ks, dt: f64) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_stateseal"));
    c.args([
        "rotate",
        "--force",
        "--max-live-keys",
        "1000",
        "--store",
        &ks.store,
    ])
    .args([
        "--now",
        &(1_782_345_600.0 + dt).to_string(),
        "--allow-clock-override",
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    c
}

#[test]
fn concurrent_rotations_each_land_or_are_refused() {
    let ks = Ks::new("race-rotate");
    ks.init();
    let children: Vec<_> = (0..8)
        .map(|_| rotate_cmd(&ks, 10.0).spawn().expect("spawn"))
        .collect();
    let (mut written, mut refused) = (0u64, 0u64);
    for child in children {
        let out = child.wait_with_output().expect("wait");
        match out.status.code() {
            Some(0) => written += 1,
            Some(1) => {
                let err = String::from_utf8_lossy(&out.stderr);
                assert!(err.contains("another rotation landed first"), "{err}");
                refused += 1;
            }
            other => panic!("{other:?}: {}", String::from_utf8_lossy(&out.stderr)),
        }
    }
    assert!(written >= 1, "one writer always wins");
    assert_eq!(written + refused, 8);
    // The first carries the clock floor (T0 + 10 s), each later one the next generation.
    assert_eq!(
        generation(&ks),
        1_782_345_610 + written - 1,
        "every written rotation is in the document"
    );
    let doc = crate::payload_of(&ks.bytes());
    assert_eq!(
        doc["keys"].as_array().expect("keys").len() as u64,
        1 + written
    );
    let status = ks.run(&["status", "--json"], 11.0);
    assert_eq!(status.status.code(), Some(0), "every key unwraps");
}

#[test]
fn a_rotation_killed_mid_write_leaves_a_valid_keyset() {
    let ks = Ks::new("race-kill");
    ks.init();
    let mut last = generation(&ks);
    // A cheap xorshift: kill points spread over the command's run.
    let mut seed = 0x2545_f491_4f6c_dd1d_u64 ^ u64::from(std::process::id());
    for i in 0..40 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let mut child = rotate_cmd(&ks, 10.0 + f64::from(i)).spawn().expect("spawn");
        std::thread::sleep(Duration::from_micros(seed % 40_000));
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        let now = generation(&ks);
        // Landed or not; a landed rotation takes the clock floor or the next generation.
        assert!(
            now == last || now == (last + 1).max(1_782_345_610 + i as u64),
            "generation went from {last} to {now}"
        );
        last = now;
        show_ok(&ks);
    }
    // The next rotation completes and cleans up temporary files left by the killed ones.
    let out = rotate_cmd(&ks, 100.0).output().expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(generation(&ks), (last + 1).max(1_782_345_700));
    let leftovers: Vec<_> = std::fs::read_dir(&ks.dir)
        .expect("dir")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        // The lock files and the newest copy are the store's by design;
        // temporaries must be gone.
        .filter(|n| {
            ![
                "keyset.json",
                "kek.bin",
                "keyset.json.lock",
                "keyset.json.newest",
                "keyset.json.newest.lock",
            ]
            .contains(&n.as_str())
        })
        .collect();
    assert!(leftovers.is_empty(), "left behind: {leftovers:?}");
    assert_eq!(
        std::fs::read(ks.dir.join("keyset.json.newest")).expect("copy"),
        ks.bytes(),
        "the completed rotation brought the newest copy up to date"
    );
}
