//! `hcvault://` and `vault-kv://` against a real OpenBao server: the CLI
//! lifecycle, binding, concurrent rotations, revocation, outages, AppRole.

use stateseal::provider::ErrorClass;
use stateseal::rotation::{RotateMode, Timing, init_keyset};
use stateseal::{Error, KeyProvider, ProviderRegistry};
use stateseal_testkit::keysets;
use stateseal_vault::{SecretId, SecretString, VaultAuth, VaultConfig, VaultTransitProvider};

use crate::member::{T0, base64_of, class, ctx, instance, round, works};
use crate::openbao::{FLEET_POLICY, OpenBao};
use crate::{json_of, stateseal_with, text};

const KEK: &str = "hcvault://transit/keys/stateseal";
const STORE: &str = "vault-kv://secret/stateseal/keyset";

fn token_config(bao: &OpenBao, token: &str) -> VaultConfig {
    VaultConfig::builder(&bao.addr)
        .auth(VaultAuth::Token(SecretString::new(token)))
        .build()
        .expect("config")
}

fn registry(config: VaultConfig) -> ProviderRegistry {
    let mut r = ProviderRegistry::with_defaults();
    stateseal_vault::register(&mut r, Ok(config));
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transit_wraps_are_bound_to_keyset_and_entry_and_survive_key_rotation() {
    let bao = OpenBao::start(&crate::scratch("openbao-binding"));
    let provider = VaultTransitProvider::new(token_config(&bao, &bao.root_token));
    let dk = provider
        .generate(KEK, ctx("ks_a", "k_1"))
        .await
        .expect("generate");
    assert_eq!(dk.plaintext.len(), 32);
    assert!(dk.wrapped.starts_with(b"vault:v1:"));
    let back = provider
        .unwrap(KEK, &dk.wrapped, ctx("ks_a", "k_1"))
        .await
        .expect("unwrap");
    assert_eq!(back.expose(), dk.plaintext.expose());

    // Moved to another entry or keyset: authentication fails → Invalid.
    for (ks, entry) in [("ks_a", "k_2"), ("ks_b", "k_1")] {
        let e = provider
            .unwrap(KEK, &dk.wrapped, ctx(ks, entry))
            .await
            .unwrap_err();
        assert_eq!(class(&e), Some(ErrorClass::Invalid), "{e}");
    }
    let e = provider
        .unwrap(KEK, b"not-a-wrap", ctx("ks_a", "k_1"))
        .await
        .unwrap_err();
    assert_eq!(class(&e), Some(ErrorClass::Invalid), "{e}");
    // A missing transit key is access lost → Denied.
    let e = provider
        .unwrap(
            "hcvault://transit/keys/missing",
            &dk.wrapped,
            ctx("ks_a", "k_1"),
        )
        .await
        .unwrap_err();
    assert_eq!(class(&e), Some(ErrorClass::Denied), "{e}");

    // Transit key rotation: old wraps still open, new ones use version 2.
    bao.ok(&["write", "-f", "transit/keys/stateseal/rotate"]);
    let again = provider
        .unwrap(KEK, &dk.wrapped, ctx("ks_a", "k_1"))
        .await
        .expect("old wrap");
    assert_eq!(again.expose(), dk.plaintext.expose());
    let dk2 = provider
        .generate(KEK, ctx("ks_a", "k_3"))
        .await
        .expect("generate v2");
    assert!(dk2.wrapped.starts_with(b"vault:v2:"));

    // A key that is not derived would silently drop the binding: refused.
    bao.ok(&["write", "-f", "transit/keys/plain"]);
    let e = provider
        .generate("hcvault://transit/keys/plain", ctx("ks_a", "k_4"))
        .await
        .unwrap_err();
    assert_eq!(class(&e), Some(ErrorClass::Config), "{e}");
    assert!(e.to_string().contains("derived=true"), "{e}");
    // No message carries key material.
    let b64 = base64_of(dk.plaintext.expose());
    assert!(!e.to_string().contains(&b64));
}

#[test]
fn cli_init_rotate_status_and_keyset_tokens_through_vault() {
    let bao = OpenBao::start(&crate::scratch("openbao-cli"));
    let token = bao.token_with_policy("fleet", FLEET_POLICY);
    let base = [
        ("VAULT_ADDR", bao.addr.as_str()),
        ("VAULT_TOKEN", token.as_str()),
    ];
    let now = |dt: f64| (T0 + dt).to_string();
    let init = json_of(&stateseal_with(
        &[
            "init",
            "--kek",
            KEK,
            "--store",
            STORE,
            "--now",
            &now(0.0),
            "--allow-clock-override",
            "--json",
        ],
        &base,
        None,
    ));
    let first = init["kid"].as_str().expect("kid").to_owned();
    // The document is in KV v2, readable by operators, holding only wraps under a tag.
    let kv = bao.bao_json(&["kv", "get", "secret/stateseal/keyset"]);
    assert_eq!(kv["data"]["data"]["format"], "stateseal.keyset/v2");
    assert_eq!(kv["data"]["data"]["mac"]["kek"], KEK);
    let pins = crate::member::pin_vars(&init);
    let envs = [
        base[0],
        base[1],
        (pins[0].0, pins[0].1.as_str()),
        (pins[1].0, pins[1].1.as_str()),
    ];
    let run = |args: &[&str]| stateseal_with(args, &envs, None);

    let mint = |dt: f64| crate::member::keyset_mint(STORE, &envs, dt);
    let verify = |tok: &str, dt: f64| crate::member::keyset_verify(STORE, &envs, tok, dt);

    let before = mint(10.0);
    let ok = verify(&before, 20.0);
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    assert_eq!(text(&ok.stdout), "awaiting-confirm");

    let rot = run(&[
        "rotate",
        "--store",
        STORE,
        "--now",
        &now(100.0),
        "--allow-clock-override",
    ]);
    assert!(rot.status.success(), "{}", text(&rot.stderr));
    let st = json_of(&run(&[
        "status",
        "--store",
        STORE,
        "--json",
        "--now",
        &now(150.0),
    ]));
    assert_eq!(st["phase"], 1);
    assert_eq!(st["primary"], first.as_str());
    assert_eq!(st["ring"].as_array().expect("ring").len(), 2);
    let p2 = json_of(&run(&[
        "status",
        "--store",
        STORE,
        "--json",
        "--now",
        &now(230.0),
    ]));
    assert_eq!(p2["phase"], 2);
    // A state from before the rotation still opens in phase 2.
    assert_eq!(verify(&before, 230.0).status.code(), Some(0));
    let kv = bao.bao_json(&["kv", "get", "secret/stateseal/keyset"]);
    assert_eq!(kv["data"]["data"]["generation"], (T0 + 100.0) as u64);

    // Without credentials the CLI says what to set, and never prints the token.
    let no_auth = stateseal_with(
        &["status", "--store", STORE, "--json"],
        &[
            ("VAULT_ADDR", bao.addr.as_str()),
            ("VAULT_TOKEN", ""),
            envs[2],
            envs[3],
        ],
        None,
    );
    // The store cannot be read: exit 2, the error (JSON, as asked) names the variable.
    assert_eq!(no_auth.status.code(), Some(2), "{}", text(&no_auth.stderr));
    let err: serde_json::Value = serde_json::from_slice(&no_auth.stdout).expect("json error");
    assert!(
        err["error"]
            .as_str()
            .expect("error")
            .contains("VAULT_TOKEN"),
        "{err}"
    );
    for out in [&rot, &ok, &no_auth] {
        assert!(!text(&out.stdout).contains(&token) && !text(&out.stderr).contains(&token));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_rotations_exactly_one_wins() {
    let bao = OpenBao::start(&crate::scratch("openbao-cas"));
    let reg = registry(token_config(&bao, &bao.root_token));
    let store = reg.open_store(STORE).expect("store");
    let doc = init_keyset(&*store, &reg, KEK, Timing::default(), T0)
        .await
        .expect("init");
    assert_eq!(doc.generation, 1);

    // Store level: two writers based on the same generation; one wins.
    let v = keysets::verified(&*store, &reg).await;
    let mut next = doc.clone();
    next.generation = 2;
    let a = v.seal_next(&next, keysets::FAR_FUTURE).expect("seal");
    let b = a.clone();
    let (ra, rb) = tokio::join!(
        store.compare_and_swap(Some(1), &a),
        store.compare_and_swap(Some(1), &b)
    );
    assert!(ra.is_ok() != rb.is_ok(), "{ra:?} {rb:?}");
    let lost = ra.err().or(rb.err()).expect("one lost");
    assert!(
        matches!(
            lost,
            Error::Conflict {
                expected: Some(1),
                ..
            }
        ),
        "{lost}"
    );
    // A stale write is refused too.
    let stale = a.clone();
    assert!(matches!(
        store.compare_and_swap(Some(1), &stale).await,
        Err(Error::Conflict { found: Some(2), .. })
    ));

    // CLI level: four operators rotate at once; one rotation lands.
    let envs: Vec<_> = [
        ("VAULT_ADDR", bao.addr.clone()),
        ("VAULT_TOKEN", bao.root_token.clone()),
    ]
    .into_iter()
    .chain(keysets::pin_vars(&*store, &reg).await)
    .collect();
    crate::member::rotate_concurrently(STORE, &envs);
    let after = keysets::content(&*store, &reg).await;
    assert_eq!(after.generation, (T0 + 50.0) as u64);
    assert_eq!(after.keys.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoked_decrypt_is_denied_and_the_key_dropped_after_max_key_age() {
    let bao = OpenBao::start(&crate::scratch("openbao-revoke"));
    let token = bao.token_with_policy("fleet", FLEET_POLICY);
    let reg = registry(token_config(&bao, &token));
    let store = reg.open_store(STORE).expect("store");
    init_keyset(&*store, &reg, KEK, Timing::default(), T0)
        .await
        .expect("init");
    let i = instance(&reg, store.clone()).await;
    let doc = keysets::content(&*store, &reg).await;
    i.sched.refresh_at(T0).await.expect("refresh");
    assert!(works(&i, T0));
    let calls = i.sched.kms_calls();
    // Steady state: refreshes within max_key_age make no KMS call.
    for dt in [30.0, 60.0, 1800.0, 3599.0] {
        i.sched.refresh_at(T0 + dt).await.expect("refresh");
    }
    assert_eq!(i.sched.kms_calls(), calls);

    // The operator removes decrypt from the fleet's policy.
    bao.write_policy(
        "fleet",
        r#"path "secret/data/stateseal/*" { capabilities = ["read"] }"#,
    );
    let reg2 = registry(token_config(&bao, &token));
    let provider = reg2.provider_for(KEK).expect("provider");
    let e = provider
        .unwrap(KEK, &doc.keys[0].wrapped, ctx(&doc.id, &doc.keys[0].entry))
        .await
        .unwrap_err();
    assert_eq!(class(&e), Some(ErrorClass::Denied), "{e}");
    // Until max_key_age the cached key serves; after it, the key is dropped: fail closed.
    assert!(works(&i, T0 + 3599.0));
    assert!(matches!(
        i.sched.refresh_at(T0 + 3601.0).await.unwrap_err(),
        Error::KeysUnavailable(_)
    ));
    assert!(!i.sched.is_ready());
    assert!(!works(&i, T0 + 3601.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sealed_or_stopped_server_keeps_serving_cached_keys() {
    let mut bao = OpenBao::start(&crate::scratch("openbao-outage"));
    let reg = registry(token_config(&bao, &bao.root_token));
    let store = reg.open_store(STORE).expect("store");
    init_keyset(&*store, &reg, KEK, Timing::default(), T0)
        .await
        .expect("init");
    let i = instance(&reg, store).await;
    i.sched.refresh_at(T0).await.expect("refresh");
    let token = i.env.mint_at(&round(), b"before", None, T0).expect("mint");

    bao.seal();
    let calls = i.sched.kms_calls();
    // Past max_key_age the scheduler tries to re-unwrap: the server is sealed.
    let during = T0 + 4000.0;
    assert!(
        i.sched.refresh_at(during).await.is_err(),
        "the store is sealed too"
    );
    assert!(i.sched.is_ready());
    assert!(works(&i, during));
    bao.unseal();
    i.sched
        .refresh_at(during + 30.0)
        .await
        .expect("recovered after unseal");
    assert!(i.sched.kms_calls() > calls);

    bao.stop();
    let later = T0 + 8000.0;
    assert!(i.sched.refresh_at(later).await.is_err());
    assert!(i.sched.is_ready());
    assert!(works(&i, later));
    assert!(i.env.verify_at(&round(), &token, None, T0 + 10.0).is_ok());
    bao.restart();
    let st = i
        .sched
        .refresh_at(later + 30.0)
        .await
        .expect("recovered after restart");
    assert!(st.ready);
    // A rotation after the restart lands in the same store.
    let doc = i
        .sched
        .rotate_at(later + 60.0, RotateMode::Scheduled)
        .await
        .expect("rotate");
    assert_eq!(doc.generation, 2);
}

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
