//! `aws-kms://` and `s3://` against a real AWS-API server (moto): the CLI
//! lifecycle, concurrent rotations, encryption-context binding, revocation,
//! a KMS outage, and KMS calls in steady state.

use stateseal::provider::ErrorClass;
use stateseal::rotation::{Timing, init_keyset};
use stateseal::{Error, KeyProvider, KeysetError, ProviderRegistry};
use stateseal_aws_kms::{AwsConfig, AwsKmsProvider};

use stateseal_testkit::instant;
use stateseal_testkit::keysets;

use crate::member::{T0, base64_of, class, ctx};
use crate::moto::{Moto, REGION};
use crate::{json_of, stateseal_with, text};

pub(crate) fn config(moto: &Moto) -> AwsConfig {
    AwsConfig::builder()
        .endpoint_url(&moto.endpoint)
        .region(REGION)
        .credentials(aws_credential_types::Credentials::for_tests())
        .build()
        .expect("config")
}

pub(crate) fn registry(moto: &Moto) -> ProviderRegistry {
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
    let doc = init_keyset(&*store, &reg, &kek, Timing::default(), instant(T0))
        .await
        .expect("init");
    // A second init finds the document (If-None-Match) and refuses.
    assert!(matches!(
        init_keyset(&*store, &reg, &kek, Timing::default(), instant(T0)).await,
        Err(Error::Keyset(KeysetError::Conflict { .. }))
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
            Error::Keyset(KeysetError::Conflict {
                expected: Some(1),
                ..
            })
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
    init_keyset(&*store, &reg, &kek, Timing::default(), instant(T0))
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
