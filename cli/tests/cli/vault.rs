//! `hcvault://` and `vault-kv://` against a real OpenBao server: the CLI
//! lifecycle, binding, concurrent rotations, revocation, outages, AppRole.

use stateseal::provider::ErrorClass;
use stateseal::rotation::{RotateMode, Timing, init_keyset};
use stateseal::{
    DataError, Error, KeyProvider, KeysetError, MintOptions, OpenOptions, ProviderRegistry,
};
use stateseal_testkit::instant;
use stateseal_testkit::keysets;
use stateseal_vault::{SecretString, VaultAuth, VaultConfig, VaultTransitProvider};

use crate::member::{T0, base64_of, class, ctx, instance, round, works};
use crate::openbao::{FLEET_POLICY, OpenBao};
use crate::{json_of, stateseal_with, text};

pub(crate) const KEK: &str = "hcvault://transit/keys/stateseal";
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
    let doc = init_keyset(&*store, &reg, KEK, Timing::default(), instant(T0))
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
            Error::Keyset(KeysetError::Conflict {
                expected: Some(1),
                ..
            })
        ),
        "{lost}"
    );
    // A stale write is refused too.
    let stale = a.clone();
    assert!(matches!(
        store.compare_and_swap(Some(1), &stale).await,
        Err(Error::Keyset(KeysetError::Conflict { found: Some(2), .. }))
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
    init_keyset(&*store, &reg, KEK, Timing::default(), instant(T0))
        .await
        .expect("init");
    let i = instance(&reg, store.clone()).await;
    let doc = keysets::content(&*store, &reg).await;
    i.sched.refresh_at(instant(T0)).await.expect("refresh");
    assert!(works(&i, T0));
    let calls = i.sched.kms_calls();
    // Steady state: refreshes within max_key_age make no KMS call.
    for dt in [30.0, 60.0, 1800.0, 3599.0] {
        i.sched.refresh_at(instant(T0 + dt)).await.expect("refresh");
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
        i.sched.refresh_at(instant(T0 + 3601.0)).await.unwrap_err(),
        Error::Data(DataError::KeysUnavailable(_))
    ));
    assert!(!i.sched.is_ready());
    assert!(!works(&i, T0 + 3601.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sealed_or_stopped_server_keeps_serving_cached_keys() {
    let mut bao = OpenBao::start(&crate::scratch("openbao-outage"));
    let reg = registry(token_config(&bao, &bao.root_token));
    let store = reg.open_store(STORE).expect("store");
    init_keyset(&*store, &reg, KEK, Timing::default(), instant(T0))
        .await
        .expect("init");
    let i = instance(&reg, store).await;
    i.sched.refresh_at(instant(T0)).await.expect("refresh");
    let token = i
        .env
        .mint(&round(), b"before", MintOptions::new().at(instant(T0)))
        .expect("mint");

    bao.seal();
    let calls = i.sched.kms_calls();
    // Past max_key_age the scheduler tries to re-unwrap: the server is sealed.
    let during = T0 + 4000.0;
    assert!(
        i.sched.refresh_at(instant(during)).await.is_err(),
        "the store is sealed too"
    );
    assert!(i.sched.is_ready());
    assert!(works(&i, during));
    bao.unseal();
    i.sched
        .refresh_at(instant(during + 30.0))
        .await
        .expect("recovered after unseal");
    assert!(i.sched.kms_calls() > calls);

    bao.stop();
    let later = T0 + 8000.0;
    assert!(i.sched.refresh_at(instant(later)).await.is_err());
    assert!(i.sched.is_ready());
    assert!(works(&i, later));
    assert!(
        i.env
            .open(&round(), &token, OpenOptions::new().at(instant(T0 + 10.0)))
            .is_ok()
    );
    bao.restart();
    let st = i
        .sched
        .refresh_at(instant(later + 30.0))
        .await
        .expect("recovered after restart");
    assert!(st.ready);
    // A rotation after the restart lands in the same store.
    let doc = i
        .sched
        .rotate_at(instant(later + 60.0), RotateMode::Scheduled)
        .await
        .expect("rotate");
    assert_eq!(doc.generation, 2);
}
