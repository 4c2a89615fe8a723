//! Bad flags and settings: exit 2 with a message naming what to fix, before
//! anything is served, and the keyset untouched.

use super::{Fleet, ProxyProcess};
use crate::{stateseal_with, text};

fn refused(args: &[&str], config_extra: Option<&str>) -> String {
    let fleet = Fleet::new("inputs", config_extra.unwrap_or(""), None);
    let keyset = std::fs::read(fleet.dir.join("keyset.json")).expect("keyset");
    let config = fleet.config.display().to_string();
    let mut all = vec!["proxy"];
    all.extend_from_slice(args);
    all.extend(["--config", &config]);
    let out = stateseal_with(&all, &[], None);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{args:?}: {}",
        text(&out.stderr)
    );
    assert_eq!(
        std::fs::read(fleet.dir.join("keyset.json")).expect("keyset"),
        keyset
    );
    assert!(
        !text(&out.stderr).contains("listening"),
        "{}",
        text(&out.stderr)
    );
    text(&out.stderr)
}

const OK: [&str; 4] = [
    "--listen",
    "127.0.0.1:0",
    "--upstream",
    "http://127.0.0.1:9/mcp",
];

#[test]
fn bad_flags_exit_2_naming_the_flag() {
    let e = refused(
        &[
            "--listen",
            "localhost",
            "--upstream",
            "http://127.0.0.1:9/mcp",
        ],
        None,
    );
    assert!(
        e.contains("--listen \"localhost\": expected HOST:PORT"),
        "{e}"
    );
    let e = refused(
        &[
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "ftp://127.0.0.1/mcp",
        ],
        None,
    );
    assert!(
        e.contains("--upstream \"ftp://127.0.0.1/mcp\": expected an http:// or https:// URL"),
        "{e}"
    );
    let e = refused(
        &[
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "http://user:pw@127.0.0.1/mcp",
        ],
        None,
    );
    assert!(
        e.contains("credentials do not belong in the URL") && !e.contains("pw@"),
        "{e}"
    );
    let e = refused(&["--listen", "127.0.0.1:0"], None);
    assert!(e.contains("--upstream"), "{e}");
    let e = refused(
        &[
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "http://127.0.0.1:9/mcp",
            "--admin",
            "nowhere",
        ],
        None,
    );
    assert!(e.contains("--admin \"nowhere\""), "{e}");
}

#[test]
fn bad_settings_exit_2_naming_the_setting() {
    for (extra, words) in [
        (
            "[proxy]\nprincipal = \"jwt\"\n",
            "[proxy] principal must be \"oauth\", \"header\" or \"none\"",
        ),
        (
            "[proxy]\nmax_body = 1\n",
            "[proxy] has no setting \"max_body\"",
        ),
        (
            "[proxy]\nprincipal = \"header\"\n",
            "needs principal_header",
        ),
        (
            "[oauth]\nissuer = \"https://as.example\"\naudience = \"a\"\n",
            "[oauth] invalid configuration: jwks_uri is required",
        ),
        ("ttl = -5\n", "ttl"),
        ("proxy = 3\n", "proxy must be a table"),
    ] {
        let e = refused(&OK, Some(extra));
        assert!(e.contains(words), "{extra}: {e}");
        assert!(e.contains("--config "), "the file is named: {e}");
    }
}

#[test]
fn the_proxy_serves_and_says_where() {
    let fleet = Fleet::new("serves", "", None);
    let proxy = ProxyProcess::start("http://127.0.0.1:9/mcp", &fleet.config);
    assert!(
        proxy.url.starts_with("http://127.0.0.1:") && proxy.url.ends_with("/mcp"),
        "{}",
        proxy.url
    );
    assert!(
        proxy
            .logged()
            .contains("principal = \"none\": states are bound to no caller"),
        "{}",
        proxy.logged()
    );
    assert!(proxy.pid() > 0);
}
