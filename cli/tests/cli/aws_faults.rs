//! AWS KMS failing under a running keyset, against moto: a disabled or
//! deleted key dropped after its maximum age, an outage served from cached
//! keys, a credential chain that times out classed as transient.

use stateseal::provider::ErrorClass;
use stateseal::rotation::{Timing, init_keyset};
use stateseal::{DataError, Error, KeyProvider, MintOptions, OpenOptions};
use stateseal_aws_kms::{AwsConfig, AwsKmsProvider};
use stateseal_testkit::instant;
use stateseal_testkit::keysets;

use crate::aws::{config, registry};
use crate::member::{T0, class, ctx, instance, round, works};
use crate::moto::{Moto, REGION};

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
    init_keyset(&*store, &reg, &kek, Timing::default(), instant(T0))
        .await
        .expect("init");
    let i = instance(&reg, store.clone()).await;
    i.sched.refresh_at(instant(T0)).await.expect("refresh");
    let doc = keysets::content(&*store, &reg).await;
    let calls = i.sched.kms_calls();
    // Steady state: traffic and refreshes within max_key_age make no KMS call.
    for k in 0..2000 {
        assert!(works(&i, T0 + f64::from(k) * 0.5));
    }
    for dt in [30.0, 60.0, 1800.0, 3599.0] {
        i.sched.refresh_at(instant(T0 + dt)).await.expect("refresh");
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
        i.sched.refresh_at(instant(T0 + 3601.0)).await.unwrap_err(),
        Error::Data(DataError::KeysUnavailable(_))
    ));
    assert!(!works(&i, T0 + 3601.0));

    // Enabled again: the next refresh unwraps and serves; scheduled deletion is denied too.
    moto.boto(&format!("kms.enable_key(KeyId='{key_id}')"));
    i.sched
        .refresh_at(instant(T0 + 3700.0))
        .await
        .expect("re-enabled");
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
        i.sched.refresh_at(instant(T0 + 7400.0)).await.unwrap_err(),
        Error::Data(DataError::KeysUnavailable(_))
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
    init_keyset(&*store, &reg, &kek, Timing::default(), instant(T0))
        .await
        .expect("init");
    let i = instance(&reg, store).await;
    i.sched.refresh_at(instant(T0)).await.expect("refresh");
    let token = i
        .env
        .mint(&round(), b"before", MintOptions::new().at(instant(T0)))
        .expect("mint");
    moto.stop();
    let calls = i.sched.kms_calls();
    // Past max_key_age the scheduler re-unwraps: KMS is unreachable (Transient), the cached key serves.
    for dt in [4000.0, 20_000.0, 80_000.0] {
        i.sched
            .refresh_at(instant(T0 + dt))
            .await
            .expect("refresh during the outage");
        assert!(i.sched.is_ready(), "not ready at +{dt}");
        assert!(works(&i, T0 + dt));
    }
    assert!(i.sched.kms_calls() > calls, "the scheduler kept trying KMS");
    assert!(
        i.env
            .open(&round(), &token, OpenOptions::new().at(instant(T0 + 10.0)))
            .is_ok()
    );
    // Past max_key_age + outage_grace: dropped, fail closed.
    assert!(matches!(
        i.sched
            .refresh_at(instant(T0 + 3600.0 + 86_401.0))
            .await
            .unwrap_err(),
        Error::Data(DataError::KeysUnavailable(_))
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
