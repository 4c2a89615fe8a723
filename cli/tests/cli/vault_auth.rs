//! How the Vault / OpenBao provider logs in, against a real OpenBao server:
//! AppRole (a secret id file read at every login), token renewal across an
//! outage, Kubernetes service-account login.

use stateseal::KeyProvider;
use stateseal::provider::ErrorClass;
use stateseal_vault::{SecretId, SecretString, VaultAuth, VaultConfig, VaultTransitProvider};

use crate::member::{class, ctx};
use crate::openbao::{FLEET_POLICY, OpenBao};
use crate::text;
use crate::vault::KEK;

/// Enables AppRole with a role `mcp` on the fleet policy (plus `settings`); returns its role id.
fn approle_role(bao: &OpenBao, settings: &[&str]) -> String {
    bao.write_policy("fleet", FLEET_POLICY);
    bao.ok(&["auth", "enable", "approle"]);
    let mut args = vec!["write", "auth/approle/role/mcp", "token_policies=fleet"];
    args.extend_from_slice(settings);
    bao.ok(&args);
    bao.bao_json(&["read", "auth/approle/role/mcp/role-id"])["data"]["role_id"]
        .as_str()
        .expect("role id")
        .to_owned()
}

/// A new secret id for the role `mcp`.
fn approle_secret_id(bao: &OpenBao) -> String {
    bao.bao_json(&["write", "-f", "auth/approle/role/mcp/secret-id"])["data"]["secret_id"]
        .as_str()
        .expect("secret id")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approle_login_renews_and_logs_in_again_after_revocation() {
    let bao = OpenBao::start(&crate::scratch("openbao-approle"));
    let role_id = approle_role(&bao, &["token_ttl=60s", "token_max_ttl=1h"]);
    let secret_id = approle_secret_id(&bao);
    let config = VaultConfig::builder(&bao.addr)
        .auth(VaultAuth::AppRole {
            mount: "approle".into(),
            role_id,
            secret_id: SecretId::Value(SecretString::new(secret_id.clone())),
        })
        // Renew when 99.9 % of the 60 s TTL is left: every call after the first 60 ms renews.
        .renew_before(0.999)
        .build()
        .expect("config");
    assert!(!format!("{config:?}").contains(&secret_id));
    let provider = VaultTransitProvider::new(config);
    let dk = provider
        .generate(KEK, ctx("ks_a", "k_1"))
        .await
        .expect("generate");
    assert_eq!(provider.auth_stats().logins, 1);
    let mut renewed = false;
    for _ in 0..50 {
        provider
            .unwrap(KEK, &dk.wrapped, ctx("ks_a", "k_1"))
            .await
            .expect("unwrap");
        if provider.auth_stats().renewals > 0 {
            renewed = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(renewed, "{:?}", provider.auth_stats());

    // Every token from AppRole logins is revoked: the next call logs in again and succeeds.
    bao.ok(&["token", "revoke", "-mode=path", "auth/approle/login"]);
    provider
        .unwrap(KEK, &dk.wrapped, ctx("ks_a", "k_1"))
        .await
        .expect("after revocation");
    assert_eq!(provider.auth_stats().logins, 2);

    // A wrong secret id is Denied and says so without echoing it.
    let bad = VaultTransitProvider::new(
        VaultConfig::builder(&bao.addr)
            .auth(VaultAuth::AppRole {
                mount: "approle".into(),
                role_id: "nope".into(),
                secret_id: SecretId::Value(SecretString::new("wrong-secret-id")),
            })
            .build()
            .expect("config"),
    );
    let e = bad
        .unwrap(KEK, &dk.wrapped, ctx("ks_a", "k_1"))
        .await
        .unwrap_err();
    assert!(
        matches!(class(&e), Some(ErrorClass::Denied | ErrorClass::Invalid)),
        "{e}"
    );
    assert!(!e.to_string().contains("wrong-secret-id"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approle_secret_id_file_is_read_at_every_login() {
    let bao = OpenBao::start(&crate::scratch("openbao-secret-id"));
    // Secret ids that can be used once: a server that reused the first one would be refused.
    let role_id = approle_role(&bao, &["token_ttl=1h", "secret_id_num_uses=1"]);
    let file = crate::scratch("openbao-secret-id").join("secret-id");
    std::fs::write(&file, format!("{}\n", approle_secret_id(&bao))).expect("write");
    let provider = VaultTransitProvider::new(
        VaultConfig::builder(&bao.addr)
            .auth(VaultAuth::AppRole {
                mount: "approle".into(),
                role_id,
                secret_id: SecretId::File(file.clone()),
            })
            .build()
            .expect("config"),
    );
    let dk = provider
        .generate(KEK, ctx("ks_a", "k_1"))
        .await
        .expect("generate");
    assert_eq!(provider.auth_stats().logins, 1);
    // The delivery side (Vault Agent, CSI, a job) rotates the secret id; the login token dies.
    std::fs::write(&file, approle_secret_id(&bao)).expect("rotate");
    bao.ok(&["token", "revoke", "-mode=path", "auth/approle/login"]);
    provider
        .unwrap(KEK, &dk.wrapped, ctx("ks_a", "k_1"))
        .await
        .expect("logs in again with the rotated secret id");
    assert_eq!(provider.auth_stats().logins, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_renewal_survives_vault_being_down_during_a_renewal() {
    let mut bao = OpenBao::start(&crate::scratch("openbao-renew-outage"));
    bao.write_policy("fleet", FLEET_POLICY);
    let token =
        bao.bao_json(&["token", "create", "-policy=fleet", "-ttl=30s"])["auth"]["client_token"]
            .as_str()
            .expect("token")
            .to_owned();
    let provider = VaultTransitProvider::new(
        VaultConfig::builder(&bao.addr)
            .auth(VaultAuth::Token(SecretString::new(token)))
            // Renewal falls due 30 ms after the first call.
            .renew_before(0.999)
            .build()
            .expect("config"),
    );
    let dk = provider
        .generate(KEK, ctx("ks_a", "k_1"))
        .await
        .expect("generate");
    // (The first generation makes two calls; the second may already have renewed.)
    let before = provider.auth_stats().renewals;
    bao.stop();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    // The renewal falls due while Vault is down: it fails, and so does the call.
    let e = provider
        .unwrap(KEK, &dk.wrapped, ctx("ks_a", "k_1"))
        .await
        .unwrap_err();
    assert_eq!(class(&e), Some(ErrorClass::Transient), "{e}");
    assert_eq!(provider.auth_stats().renewals, before);
    bao.restart();
    // One backoff (0.5 s) later the renewal is tried again and succeeds.
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    provider
        .unwrap(KEK, &dk.wrapped, ctx("ks_a", "k_1"))
        .await
        .expect("unwrap after recovery");
    assert!(
        provider.auth_stats().renewals > before,
        "renewal resumed: {:?}",
        provider.auth_stats()
    );
}

/// A stand-in for the one Kubernetes API call Vault's Kubernetes auth makes
/// (`TokenReview`): it vouches for the service account `default/mcp-server`.
async fn token_review_api() -> (String, tokio::task::JoinHandle<()>) {
    let app = axum::Router::new().route(
        "/apis/authentication.k8s.io/v1/tokenreviews",
        axum::routing::post(|| async {
            (
                [("content-type", "application/json")],
                serde_json::json!({
                    "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                    "status": {"authenticated": true, "user": {
                        "username": "system:serviceaccount:default:mcp-server",
                        "uid": "0f6b8d4e-1111-2222-3333-444455556666",
                        "groups": ["system:serviceaccounts", "system:serviceaccounts:default"]}}
                })
                .to_string(),
            )
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, task)
}

/// A service-account JWT as a pod sees it (Vault reads its claims; the review vouches for it).
fn service_account_jwt() -> String {
    use base64::Engine;
    let b64 = |v: serde_json::Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    };
    let header = b64(serde_json::json!({"alg": "RS256", "typ": "JWT"}));
    let claims = b64(serde_json::json!({
        "iss": "kubernetes/serviceaccount",
        "kubernetes.io/serviceaccount/namespace": "default",
        "kubernetes.io/serviceaccount/service-account.name": "mcp-server",
        "kubernetes.io/serviceaccount/service-account.uid": "0f6b8d4e-1111-2222-3333-444455556666",
        "sub": "system:serviceaccount:default:mcp-server"
    }));
    let sig = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode([7u8; 256]);
    format!("{header}.{claims}.{sig}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubernetes_login_reads_the_pod_token_and_works() {
    let bao = OpenBao::start(&crate::scratch("openbao-k8s"));
    bao.write_policy("fleet", FLEET_POLICY);
    let (api, _api_task) = token_review_api().await;
    bao.ok(&["auth", "enable", "kubernetes"]);
    // Vault wants the cluster's CA even when it reaches the API over plain HTTP: any certificate.
    let ca = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
        ])
        .args([
            "-subj",
            "/CN=test-cluster-ca",
            "-days",
            "1",
            "-keyout",
            "/dev/null",
        ])
        .output()
        .expect("openssl");
    assert!(ca.status.success(), "{}", text(&ca.stderr));
    let ca_path = crate::scratch("k8s-ca").join("ca.pem");
    std::fs::write(&ca_path, &ca.stdout).expect("ca");
    bao.ok(&[
        "write",
        "auth/kubernetes/config",
        &format!("kubernetes_host={api}"),
        &format!("kubernetes_ca_cert=@{}", ca_path.display()),
        "disable_local_ca_jwt=true",
    ]);
    bao.ok(&[
        "write",
        "auth/kubernetes/role/mcp",
        "bound_service_account_names=mcp-server",
        "bound_service_account_namespaces=default",
        "token_policies=fleet",
        "token_ttl=1h",
    ]);
    let dir = crate::scratch("k8s-jwt");
    let jwt_path = dir.join("token");
    std::fs::write(&jwt_path, service_account_jwt()).expect("jwt");
    let provider = VaultTransitProvider::new(
        VaultConfig::builder(&bao.addr)
            .auth(VaultAuth::Kubernetes {
                mount: "kubernetes".into(),
                role: "mcp".into(),
                jwt_path: jwt_path.clone(),
            })
            .build()
            .expect("config"),
    );
    let dk = provider
        .generate(KEK, ctx("ks_a", "k_1"))
        .await
        .expect("generate after a Kubernetes login");
    let back = provider
        .unwrap(KEK, &dk.wrapped, ctx("ks_a", "k_1"))
        .await
        .expect("unwrap");
    assert_eq!(back.expose(), dk.plaintext.expose());
    assert_eq!(provider.auth_stats().logins, 1);

    // A role the service account is not bound to: Denied, nothing leaked.
    let other = VaultTransitProvider::new(
        VaultConfig::builder(&bao.addr)
            .auth(VaultAuth::Kubernetes {
                mount: "kubernetes".into(),
                role: "missing-role".into(),
                jwt_path,
            })
            .build()
            .expect("config"),
    );
    let e = other
        .generate(KEK, ctx("ks_a", "k_2"))
        .await
        .expect_err("an unknown role must not log in");
    assert!(
        matches!(class(&e), Some(ErrorClass::Denied | ErrorClass::Invalid)),
        "{e}"
    );
    assert!(!e.to_string().contains(&service_account_jwt()[..40]));
}
