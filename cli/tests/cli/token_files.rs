//! Secrets kept off the command line: `token mint`/`verify` read the state
//! and the principal from files or stdin (`ps` shows argv to every user).

use crate::operator::cli;
use crate::text;

/// The state and the principal can stay off the command line (the process
/// list shows argv): read from files, or stdin; a bad path names the flag only.
#[test]
fn token_state_and_principal_come_from_files() {
    let dir = crate::scratch("token-files");
    let key = dir.join("state.key");
    std::fs::write(&key, [7u8; 32]).expect("key");
    let state = dir.join("state.txt");
    std::fs::write(&state, "s3cret-state\nline two").expect("state");
    let principal = dir.join("principal.txt");
    std::fs::write(&principal, "user:alice@example.com").expect("principal");
    let spec = format!("file:{}", key.display());
    let round = |extra: &[&str]| {
        let mut args = vec![
            "--key",
            &spec,
            "--method",
            "tools/call",
            "--params",
            r#"{"name":"deploy"}"#,
            "--audience",
            "svc",
        ];
        args.extend_from_slice(extra);
        args.into_iter().map(str::to_owned).collect::<Vec<_>>()
    };
    let p = principal.display().to_string();
    let s = state.display().to_string();
    let mut mint = vec!["token".to_owned(), "mint".to_owned()];
    mint.extend(round(&["--state-file", &s, "--principal-file", &p]));
    let out = cli().args(&mint).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let token = text(&out.stdout).trim().to_owned();
    // Verified with the principal from a file: the exact state back.
    let mut verify = vec!["token".to_owned(), "verify".to_owned()];
    verify.extend(round(&["--principal-file", &p, &token]));
    let ok = cli().args(&verify).output().expect("run");
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    assert_eq!(text(&ok.stdout), "s3cret-state\nline two");
    // Another principal: refused.
    let mut other = vec!["token".to_owned(), "verify".to_owned()];
    other.extend(round(&["--principal", "user:bob@example.com", &token]));
    assert_eq!(
        cli().args(&other).output().expect("run").status.code(),
        Some(1)
    );
    // An unreadable file: exit 2, names the flag and the path, nothing of any secret.
    let mut bad = vec!["token".to_owned(), "mint".to_owned()];
    let missing = dir.join("missing.txt").display().to_string();
    bad.extend(round(&["--state-file", &missing]));
    let out = cli().args(&bad).output().expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("--state-file") && err.contains("missing.txt"),
        "{err}"
    );
    // Both forms at once: a usage error.
    let mut both = vec!["token".to_owned(), "mint".to_owned()];
    both.extend(round(&["--state", "x", "--state-file", &s]));
    assert_eq!(
        cli().args(&both).output().expect("run").status.code(),
        Some(2)
    );
}
