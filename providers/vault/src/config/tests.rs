use super::*;
use std::collections::HashMap;

fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let m: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |k| m.get(k).cloned()
}

#[test]
fn env_token_and_errors_name_the_variable() {
    let c = VaultConfig::from_vars(vars(&[
        ("VAULT_ADDR", "http://127.0.0.1:8200/"),
        ("VAULT_TOKEN", "root-token-value"),
        ("VAULT_NAMESPACE", "ns1"),
    ]))
    .unwrap();
    assert_eq!(c.address(), "http://127.0.0.1:8200");
    assert_eq!(c.namespace(), Some("ns1"));
    assert_eq!(c.auth().method(), "token");
    assert!(!format!("{c:?}").contains("root-token-value"));

    let e = VaultConfig::from_vars(vars(&[])).unwrap_err().to_string();
    assert!(e.contains("VAULT_ADDR"), "{e}");
    let e = VaultConfig::from_vars(vars(&[("VAULT_ADDR", "http://h:1")]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("VAULT_TOKEN"), "{e}");
    let e = VaultConfig::from_vars(vars(&[
        ("VAULT_ADDR", "http://h:1"),
        ("STATESEAL_VAULT_AUTH", "approle"),
        ("STATESEAL_VAULT_SECRET_ID", "s"),
    ]))
    .unwrap_err()
    .to_string();
    assert!(e.contains("STATESEAL_VAULT_ROLE_ID"), "{e}");
    // An unknown method is refused by name, never repeated: it may be a token set by mistake.
    for given in ["ldap", "hvs.CAESIJ9secret"] {
        let e = VaultConfig::from_vars(vars(&[
            ("VAULT_ADDR", "http://h:1"),
            ("STATESEAL_VAULT_AUTH", given),
        ]))
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("STATESEAL_VAULT_AUTH: expected token, approle or kubernetes"),
            "{e}"
        );
        assert!(!e.contains(given), "the value is echoed: {e}");
    }
    let e = VaultConfig::from_vars(vars(&[("VAULT_ADDR", "h:1"), ("VAULT_TOKEN", "t")]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("http(s)://host:port"), "{e}");
    for remote in [
        "http://vault.internal:8200",
        "http://127.0.0.1.evil.example:8200",
    ] {
        let e = VaultConfig::from_vars(vars(&[("VAULT_ADDR", remote), ("VAULT_TOKEN", "t")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("loopback") && !e.contains("\"t\""), "{e}");
    }
}

#[test]
fn env_approle_and_kubernetes() {
    let c = VaultConfig::from_vars(vars(&[
        ("VAULT_ADDR", "https://vault:8200"),
        ("STATESEAL_VAULT_AUTH", "approle"),
        ("STATESEAL_VAULT_ROLE_ID", "role-1"),
        ("STATESEAL_VAULT_SECRET_ID", "secret-id-value"),
    ]))
    .unwrap();
    match c.auth() {
        VaultAuth::AppRole {
            mount,
            role_id,
            secret_id,
        } => {
            assert_eq!((mount.as_str(), role_id.as_str()), ("approle", "role-1"));
            assert_eq!(secret_id.read().unwrap().expose(), "secret-id-value");
        }
        other => panic!("{other:?}"),
    }
    let debug = format!("{c:?}");
    assert!(!debug.contains("secret-id-value"), "{debug}");
    assert!(!debug.contains("role-1"), "{debug}");
    // A secret id file is read at every login, so a rotated one is picked up.
    let file = std::env::temp_dir().join(format!("stateseal-secret-id-{}", std::process::id()));
    std::fs::write(&file, "first\n").unwrap();
    let path = file.display().to_string();
    let c = VaultConfig::from_vars(vars(&[
        ("VAULT_ADDR", "https://vault:8200"),
        ("STATESEAL_VAULT_AUTH", "approle"),
        ("STATESEAL_VAULT_ROLE_ID", "role-1"),
        ("STATESEAL_VAULT_SECRET_ID_FILE", &path),
    ]))
    .unwrap();
    let VaultAuth::AppRole { secret_id, .. } = c.auth() else {
        panic!("approle")
    };
    assert_eq!(secret_id.read().unwrap().expose(), "first");
    std::fs::write(&file, "second").unwrap();
    assert_eq!(secret_id.read().unwrap().expose(), "second");
    assert!(!format!("{c:?}").contains("second"));
    std::fs::remove_file(&file).unwrap();
    let e = VaultConfig::from_vars(vars(&[
        ("VAULT_ADDR", "https://vault:8200"),
        ("STATESEAL_VAULT_AUTH", "approle"),
        ("STATESEAL_VAULT_ROLE_ID", "role-1"),
        ("STATESEAL_VAULT_SECRET_ID_FILE", &path),
    ]))
    .unwrap_err()
    .to_string();
    assert!(e.contains("STATESEAL_VAULT_SECRET_ID_FILE"), "{e}");
    let c = VaultConfig::from_vars(vars(&[
        ("VAULT_ADDR", "https://vault:8200"),
        ("STATESEAL_VAULT_AUTH", "kubernetes"),
        ("STATESEAL_VAULT_ROLE", "mcp"),
    ]))
    .unwrap();
    match c.auth() {
        VaultAuth::Kubernetes { jwt_path, .. } => {
            assert_eq!(jwt_path, &PathBuf::from(KUBERNETES_JWT_PATH));
        }
        other => panic!("{other:?}"),
    }
}
