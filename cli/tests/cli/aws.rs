//! `aws-kms://` and `s3://` against a real AWS-API server (moto): the CLI
//! lifecycle, concurrent rotations, encryption-context binding, revocation,
//! a KMS outage, and KMS calls in steady state.

use stateseal::provider::ErrorClass;
use stateseal::rotation::{Timing, init_keyset};
use stateseal::{Error, KeyProvider, ProviderRegistry};
use stateseal_aws_kms::{AwsConfig, AwsKmsProvider};

use stateseal_testkit::keysets;

use crate::member::{T0, base64_of, class, ctx, instance, round, works};
use crate::moto::{Moto, REGION};
use crate::{json_of, stateseal_with, text};

fn config(moto: &Moto) -> AwsConfig {
    AwsConfig::builder()
        .endpoint_url(&moto.endpoint)
        .region(REGION)
        .credentials(aws_credential_types::Credentials::for_tests())
        .build()
        .expect("config")
}

fn registry(moto: &Moto) -> ProviderRegistry {
    let mut r = ProviderRegistry::with_defaults();
    stateseal_aws_kms::register(&mut r, config(moto));
    let s3 = stateseal_object_store::S3Config::builder()
        .endpoint_url(&moto.endpoint)
        .region(REGION)
        .credentials(aws_credential_types::Credentials::for_tests())
        .build()
        .expect("s3 config");
    stateseal_object_store::register_s3(&mut r, s3);
    r
}

#[test]
fn cli_init_rotate_status_and_keyset_tokens_through_kms_and_s3() {
    let moto = Moto::start(&crate::scratch("moto-cli"));
    let (_, alias_arn, _) = moto.create_key("stateseal");
    moto.create_bucket("stateseal-keys");
    let kek = format!("aws-kms://{alias_arn}");
    let store = "s3://stateseal-keys/mcp/keyset.json";
    // Service-specific endpoint variables, as the SDK defines them.
    let envs: Vec<(&str, String)> = moto
        .env()
        .into_iter()
        .filter(|(k, _)| *k != "AWS_ENDPOINT_URL")
        .chain([
            ("AWS_ENDPOINT_URL_KMS", moto.endpoint.clone()),
            ("AWS_ENDPOINT_URL_S3", moto.endpoint.clone()),
        ])
        .collect();
    let now = |dt: f64| (T0 + dt).to_string();
    let base: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let init = json_of(&stateseal_with(
        &[
            "init",
            "--kek",
            &kek,
            "--store",
            store,
            "--now",
            &now(0.0),
            "--allow-clock-override",
            "--json",
        ],
        &base,
        None,
    ));
    let first = init["kid"].as_str().expect("kid").to_owned();
    let doc = moto.boto(
        "print(s3.get_object(Bucket='stateseal-keys', Key='mcp/keyset.json')['Body'].read().decode())",
    );
    let doc: serde_json::Value = serde_json::from_str(&doc).expect("keyset json");
    assert_eq!(doc["format"], "stateseal.keyset/v2");
    assert_eq!(
        doc["mac"]["kek"],
        kek.as_str(),
        "the MAC key is under the KEK"
    );
    // Without the pins init printed, the CLI refuses a shared store (exit 2).
    let unpinned = stateseal_with(&["status", "--store", store], &base, None);
    assert_eq!(
        unpinned.status.code(),
        Some(2),
        "{}",
        text(&unpinned.stderr)
    );
    assert!(
        text(&unpinned.stderr).contains("keyset_id"),
        "{}",
        text(&unpinned.stderr)
    );
    let pinned: Vec<(&str, String)> = envs
        .iter()
        .cloned()
        .chain(crate::member::pin_vars(&init))
        .collect();
    let envs: Vec<(&str, &str)> = pinned.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let run = |args: &[&str]| stateseal_with(args, &envs, None);

    let mint = |dt: f64| crate::member::keyset_mint(store, &envs, dt);
    let verify = |tok: &str, dt: f64| crate::member::keyset_verify(store, &envs, tok, dt);

    let before = mint(10.0);
    let ok = verify(&before, 20.0);
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    assert_eq!(text(&ok.stdout), "awaiting-confirm");
    let rot = run(&[
        "rotate",
        "--store",
        store,
        "--now",
        &now(100.0),
        "--allow-clock-override",
    ]);
    assert!(rot.status.success(), "{}", text(&rot.stderr));
    let st = json_of(&run(&[
        "status",
        "--store",
        store,
        "--json",
        "--now",
        &now(150.0),
    ]));
    assert_eq!(
        (st["phase"].clone(), st["primary"].clone()),
        (serde_json::json!(1), serde_json::json!(first))
    );
    let p2 = json_of(&run(&[
        "status",
        "--store",
        store,
        "--json",
        "--now",
        &now(230.0),
    ]));
    assert_eq!(p2["phase"], 2);
    assert_eq!(verify(&before, 230.0).status.code(), Some(0));

    // Without credentials: a configuration error (exit 2), not an outage.
    let pins = crate::member::pin_vars(&init);
    let no_creds = stateseal_with(
        &["status", "--store", store, "--json"],
        &[
            ("AWS_REGION", REGION),
            ("AWS_ENDPOINT_URL", moto.endpoint.as_str()),
            ("AWS_EC2_METADATA_DISABLED", "true"),
            ("AWS_CONFIG_FILE", "/nonexistent"),
            ("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent"),
            (pins[0].0, pins[0].1.as_str()),
            (pins[1].0, pins[1].1.as_str()),
        ],
        None,
    );
    assert_eq!(
        no_creds.status.code(),
        Some(2),
        "{}",
        text(&no_creds.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_rotations_on_s3_exactly_one_wins() {
    let moto = Moto::start(&crate::scratch("moto-cas"));
    let (key_arn, _, _) = moto.create_key("stateseal");
    moto.create_bucket("stateseal-cas");
    let kek = format!("aws-kms://{key_arn}");
    let store_uri = "s3://stateseal-cas/keyset.json";
    let reg = registry(&moto);
    let store = reg.open_store(store_uri).expect("store");
    let doc = init_keyset(&*store, &reg, &kek, Timing::default(), T0)
        .await
        .expect("init");
    // A second init finds the document (If-None-Match) and refuses.
    assert!(matches!(
        init_keyset(&*store, &reg, &kek, Timing::default(), T0).await,
        Err(Error::Conflict { .. })
    ));
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

    let envs: Vec<_> = moto
        .env()
        .into_iter()
        .chain(keysets::pin_vars(&*store, &reg).await)
        .collect();
    crate::member::rotate_concurrently(store_uri, &envs);
    // An operator's rotation carries a generation of at least its Unix time.
    assert_eq!(
        keysets::stored(&*store).await.generation(),
        (T0 + 50.0) as u64
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn encryption_context_binds_keyset_and_entry() {
    let moto = Moto::start(&crate::scratch("moto-ctx"));
    let (key_arn, alias_arn, _) = moto.create_key("stateseal");
    let (other_arn, _, _) = moto.create_key("other");
    let provider = AwsKmsProvider::new(config(&moto));
    let kek = format!("aws-kms://{alias_arn}");
    let dk = provider
        .generate(&kek, ctx("ks_a", "k_1"))
        .await
        .expect("generate");
    let back = provider
        .unwrap(&kek, &dk.wrapped, ctx("ks_a", "k_1"))
        .await
        .expect("unwrap");
    assert_eq!(back.expose(), dk.plaintext.expose());
    // The same wrap through the key ARN (KeyId always passed) opens too.
    let by_key = provider
        .unwrap(
            &format!("aws-kms://{key_arn}"),
            &dk.wrapped,
            ctx("ks_a", "k_1"),
        )
        .await
        .expect("unwrap by key arn");
    assert_eq!(by_key.expose(), dk.plaintext.expose());
    for (ks, entry) in [("ks_b", "k_1"), ("ks_a", "k_2")] {
        let e = provider
            .unwrap(&kek, &dk.wrapped, ctx(ks, entry))
            .await
            .unwrap_err();
        assert_eq!(class(&e), Some(ErrorClass::Invalid), "{e}");
        assert!(e.to_string().contains("InvalidCiphertextException"), "{e}");
    }
    let e = provider
        .unwrap(
            &format!("aws-kms://{other_arn}"),
            &dk.wrapped,
            ctx("ks_a", "k_1"),
        )
        .await
        .unwrap_err();
    assert_eq!(class(&e), Some(ErrorClass::Denied), "{e}");

    // A keyset document whose id was altered, even by someone holding its MAC
    // key: the MAC key's wrap is bound to the real id, and KMS says so.
    moto.create_bucket("stateseal-ctx");
    let reg = registry(&moto);
    let store = reg
        .open_store("s3://stateseal-ctx/keyset.json")
        .expect("store");
    init_keyset(&*store, &reg, &kek, Timing::default(), T0)
        .await
        .expect("init");
    let forged = "ks_000000000000000000000000";
    keysets::resealed(&*store, &reg, |d| d.id = forged.into()).await;
    let envs: Vec<(&str, String)> = moto
        .env()
        .into_iter()
        .chain([
            ("STATESEAL_KEYSET_ID", forged.to_owned()),
            ("STATESEAL_KEYSET_KEKS", kek.clone()),
        ])
        .collect();
    let envs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = stateseal_with(
        &[
            "status",
            "--store",
            "s3://stateseal-ctx/keyset.json",
            "--json",
        ],
        &envs,
        None,
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let why = text(&out.stdout);
    assert!(
        why.contains("refused (mac)") && why.contains("InvalidCiphertextException"),
        "{why}"
    );
    let leaked = base64_of(dk.plaintext.expose());
    assert!(!text(&out.stderr).contains(&leaked) && !text(&out.stdout).contains(&leaked));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disabled_or_deleted_key_is_dropped_after_max_key_age() {
    let moto = Moto::start(&crate::scratch("moto-revoke"));
    let (_, alias_arn, key_id) = moto.create_key("stateseal");
    moto.create_bucket("stateseal-revoke");
    let kek = format!("aws-kms://{alias_arn}");
    let reg = registry(&moto);
    let store = reg
        .open_store("s3://stateseal-revoke/keyset.json")
        .expect("store");
    init_keyset(&*store, &reg, &kek, Timing::default(), T0)
        .await
        .expect("init");
    let i = instance(&reg, store.clone()).await;
    i.sched.refresh_at(T0).await.expect("refresh");
    let doc = keysets::content(&*store, &reg).await;
    let calls = i.sched.kms_calls();
    // Steady state: traffic and refreshes within max_key_age make no KMS call.
    for k in 0..2000 {
        assert!(works(&i, T0 + f64::from(k) * 0.5));
    }
    for dt in [30.0, 60.0, 1800.0, 3599.0] {
        i.sched.refresh_at(T0 + dt).await.expect("refresh");
    }
    assert_eq!(i.sched.kms_calls(), calls, "steady state made KMS calls");

    moto.boto(&format!("kms.disable_key(KeyId='{key_id}')"));
    let e = reg
        .provider_for(&kek)
        .expect("provider")
        .unwrap(&kek, &doc.keys[0].wrapped, ctx(&doc.id, &doc.keys[0].entry))
        .await
        .unwrap_err();
    assert_eq!(class(&e), Some(ErrorClass::Denied), "{e}");
    assert!(e.to_string().contains("DisabledException"), "{e}");
    assert!(
        works(&i, T0 + 3599.0),
        "the cached key serves until max_key_age"
    );
    assert!(matches!(
        i.sched.refresh_at(T0 + 3601.0).await.unwrap_err(),
        Error::KeysUnavailable(_)
    ));
    assert!(!works(&i, T0 + 3601.0));

    // Enabled again: the next refresh unwraps and serves; scheduled deletion is denied too.
    moto.boto(&format!("kms.enable_key(KeyId='{key_id}')"));
    i.sched.refresh_at(T0 + 3700.0).await.expect("re-enabled");
    assert!(works(&i, T0 + 3700.0));
    moto.boto(&format!(
        "kms.schedule_key_deletion(KeyId='{key_id}', PendingWindowInDays=7)"
    ));
    let e = reg
        .provider_for(&kek)
        .expect("provider")
        .unwrap(&kek, &doc.keys[0].wrapped, ctx(&doc.id, &doc.keys[0].entry))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("KMSInvalidStateException"), "{e}");
    assert!(matches!(
        i.sched.refresh_at(T0 + 7400.0).await.unwrap_err(),
        Error::KeysUnavailable(_)
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kms_unavailable_keeps_serving_cached_keys() {
    let dir = crate::scratch("moto-outage");
    let mut moto = Moto::start(&dir);
    let (key_arn, _, _) = moto.create_key("stateseal");
    let kek = format!("aws-kms://{key_arn}");
    let reg = registry(&moto);
    // The keyset in a file, so only KMS goes away.
    let store = reg
        .open_store(&format!("file://{}", dir.join("keyset.json").display()))
        .expect("store");
    init_keyset(&*store, &reg, &kek, Timing::default(), T0)
        .await
        .expect("init");
    let i = instance(&reg, store).await;
    i.sched.refresh_at(T0).await.expect("refresh");
    let token = i.env.mint_at(&round(), b"before", None, T0).expect("mint");
    moto.stop();
    let calls = i.sched.kms_calls();
    // Past max_key_age the scheduler re-unwraps: KMS is unreachable (Transient), the cached key serves.
    for dt in [4000.0, 20_000.0, 80_000.0] {
        i.sched
            .refresh_at(T0 + dt)
            .await
            .expect("refresh during the outage");
        assert!(i.sched.is_ready(), "not ready at +{dt}");
        assert!(works(&i, T0 + dt));
    }
    assert!(i.sched.kms_calls() > calls, "the scheduler kept trying KMS");
    assert!(i.env.verify_at(&round(), &token, None, T0 + 10.0).is_ok());
    // Past max_key_age + outage_grace: dropped, fail closed.
    assert!(matches!(
        i.sched
            .refresh_at(T0 + 3600.0 + 86_401.0)
            .await
            .unwrap_err(),
        Error::KeysUnavailable(_)
    ));
}

/// The credential chain timing out (IMDS, the metadata server, STS) says
/// nothing about the key: transient, so cached keys keep serving.
#[derive(Debug)]
struct TimingOutChain;

impl aws_credential_types::provider::ProvideCredentials for TimingOutChain {
    fn provide_credentials<'a>(
        &'a self,
    ) -> aws_credential_types::provider::future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        aws_credential_types::provider::future::ProvideCredentials::ready(Err(
            aws_credential_types::provider::error::CredentialsError::provider_timed_out(
                std::time::Duration::from_secs(1),
            ),
        ))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credential_chain_failures_are_transient() {
    let moto = Moto::start(&crate::scratch("moto-creds"));
    let (key_arn, _, _) = moto.create_key("stateseal");
    let kek = format!("aws-kms://{key_arn}");
    let good = AwsKmsProvider::new(config(&moto));
    let dk = good
        .generate(&kek, ctx("ks_a", "k_1"))
        .await
        .expect("generate");
    let blip = AwsKmsProvider::new(
        AwsConfig::builder()
            .endpoint_url(&moto.endpoint)
            .region(REGION)
            .credentials_provider(TimingOutChain)
            .max_attempts(1)
            .build()
            .expect("config"),
    );
    let e = blip
        .unwrap(&kek, &dk.wrapped, ctx("ks_a", "k_1"))
        .await
        .unwrap_err();
    assert_eq!(class(&e), Some(ErrorClass::Transient), "{e}");
    assert!(e.to_string().contains("credential chain"), "{e}");
}
