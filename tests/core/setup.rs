//! One-call setup: configuration from TOML and `STATESEAL_*`, start-up that
//! waits for the first ring, and errors that name the field to fix.

use std::collections::HashMap;
use std::time::Duration;

use stateseal::setup::{Config, start};
use stateseal::{Error, LocalProvider, RequestIdentity};

use crate::fleet::{local_registry, temp_dir};

fn err(text: &str) -> String {
    match Config::from_toml_str(text) {
        Err(Error::Config(m)) => m,
        other => panic!("expected a configuration error, got {other:?}"),
    }
}

#[test]
fn invalid_configuration_names_the_field() {
    let base = "store = 'file:///tmp/k.json'\naudience = 'svc'\n";
    assert!(Config::from_toml_str(base).is_ok());
    assert!(err("audience = 'svc'").contains("store"));
    assert!(err(&format!("{base}ttl = 0")).contains("`ttl`"));
    assert!(
        err(&format!("{base}tll = 5")).contains("tll"),
        "unknown fields are refused"
    );
    assert!(
        err(&format!("{base}failure_mode = 'ignore'")).contains("failure_mode")
            || err(&format!("{base}failure_mode = 'ignore'")).contains("ignore")
    );
    assert!(err("store = 'not a uri'\naudience = 'svc'").contains("`store`"));
    assert!(err("store = 'file:///k'\naudience = ' '").contains("`audience`"));
    assert!(err(&format!("{base}create_if_missing = true")).contains("`kek`"));
    assert!(err(&format!("{base}refresh_interval = 30\npropagation = 10")).contains("propagation"));
    let ok = Config::from_toml_str(&format!(
        "{base}failure_mode = 'treat-as-absent'\nrotation_period = 0"
    ))
    .expect("valid");
    assert_eq!(ok.scheduler_config().rotation_period, None);
}

/// Every duration is written in seconds and read into a `Duration`; a value
/// that is none is refused, from the file and from `STATESEAL_*` alike, in
/// the words each field's check used when the fields held f64 seconds.
#[test]
fn durations_are_read_from_seconds_and_refused_in_their_checks_words() {
    let base = "store = 'file:///tmp/k.json'\naudience = 'svc'\n";
    for (field, value, message) in [
        (
            "ttl",
            "-1",
            "field `ttl`: must be a positive number of seconds",
        ),
        (
            "ttl",
            "0",
            "field `ttl`: must be a positive number of seconds",
        ),
        (
            "ready_timeout",
            "-0.5",
            "field `ready_timeout`: must be a positive number of seconds",
        ),
        (
            "rotation_period",
            "-1",
            "field `rotation_period`: must be zero (never) or a positive number of seconds",
        ),
        (
            "refresh_interval",
            "-30",
            "field refresh_interval must be a positive number of seconds (at most 10 years)",
        ),
        (
            "refresh_interval",
            "0",
            "field refresh_interval must be a positive number of seconds (at most 10 years)",
        ),
        (
            "max_skew",
            "-1",
            "field max_skew must be zero or a positive number of seconds (at most 10 years)",
        ),
        (
            "max_key_age",
            "0",
            "field max_key_age must be a positive number of seconds",
        ),
        (
            "outage_grace",
            "-1",
            "field outage_grace must be zero or a positive number of seconds",
        ),
        (
            "max_store_staleness",
            "0",
            "field max_store_staleness must be a positive number of seconds",
        ),
        (
            "ttl",
            "1e12",
            "field ttl must be a positive number of seconds (at most 10 years)",
        ),
    ] {
        assert_eq!(
            err(&format!("{base}{field} = {value}")),
            message,
            "{field} = {value}"
        );
        let vars: HashMap<String, String> = [
            (
                "STATESEAL_STORE".to_owned(),
                "file:///tmp/k.json".to_owned(),
            ),
            ("STATESEAL_AUDIENCE".to_owned(), "svc".to_owned()),
            (
                format!("STATESEAL_{}", field.to_ascii_uppercase()),
                value.to_owned(),
            ),
        ]
        .into_iter()
        .collect();
        match Config::from_vars(|k| vars.get(k).cloned()) {
            Err(Error::Config(m)) => assert_eq!(m, message, "STATESEAL_{field}={value}"),
            other => panic!("STATESEAL_{field}={value}: {other:?}"),
        }
    }
    let c = Config::from_toml_str(&format!(
        "{base}ttl = 0.25\nrefresh_interval = 1\nmax_skew = 0\npropagation = 1.5\nrotation_period = 0\nready_timeout = 1e300\n"
    ))
    .expect("valid");
    assert_eq!(c.ttl, Duration::from_millis(250));
    assert_eq!(c.propagation, Some(Duration::from_millis(1500)));
    assert_eq!(c.max_skew, Duration::ZERO);
    assert_eq!(c.rotation_period, None, "0 never rotates by age");
    assert_eq!(
        c.ready_timeout,
        Duration::MAX,
        "past any duration: the longest"
    );
    assert_eq!(c.scheduler_config().rotation_period, None);
}

#[test]
fn the_aead_backend_is_a_field_with_four_values() {
    use stateseal::setup::AeadName;
    let base = "store = 'file:///tmp/k.json'\naudience = 'svc'\n";
    assert_eq!(
        Config::from_toml_str(base).expect("valid").aead,
        AeadName::Auto
    );
    for (value, name) in [
        ("auto", AeadName::Auto),
        ("aws-lc", AeadName::AwsLc),
        ("ring", AeadName::Ring),
        ("split", AeadName::Split),
    ] {
        let c = Config::from_toml_str(&format!("{base}aead = '{value}'")).expect("valid");
        assert_eq!(c.aead, name);
    }
    let bad = err(&format!("{base}aead = 'openssl'"));
    assert!(
        bad.contains("auto") && bad.contains("aws-lc") && bad.contains("split"),
        "{bad}"
    );
    let vars: HashMap<&str, String> = [
        ("STATESEAL_STORE", "file:///tmp/k.json".to_owned()),
        ("STATESEAL_AUDIENCE", "svc".to_owned()),
        ("STATESEAL_AEAD", "ring".to_owned()),
    ]
    .into_iter()
    .collect();
    let c = Config::from_vars(|k| vars.get(k).cloned()).expect("config");
    assert_eq!(c.aead.backend(), Some(stateseal::AeadBackend::Ring));
}

#[test]
fn environment_overrides_the_file() {
    let dir = temp_dir("setup-env");
    let file = dir.join("stateseal.toml");
    std::fs::write(
        &file,
        "store = 'file:///from/file.json'\naudience = 'file-audience'\nttl = 120\n",
    )
    .expect("write");
    let vars: HashMap<&str, String> = [
        ("STATESEAL_CONFIG", file.display().to_string()),
        ("STATESEAL_AUDIENCE", "env-audience".to_owned()),
        ("STATESEAL_TTL", "90.5".to_owned()),
        ("STATESEAL_CREATE_IF_MISSING", "false".to_owned()),
    ]
    .into_iter()
    .collect();
    let config = Config::from_vars(|k| vars.get(k).cloned()).expect("config");
    assert_eq!(
        (config.store.as_str(), config.audience.as_str(), config.ttl),
        (
            "file:///from/file.json",
            "env-audience",
            Duration::from_millis(90_500)
        )
    );
    let bad: HashMap<&str, String> = [
        ("STATESEAL_STORE", "file:///k".to_owned()),
        ("STATESEAL_AUDIENCE", "a".to_owned()),
        ("STATESEAL_TTL", "soon".to_owned()),
    ]
    .into_iter()
    .collect();
    let e = Config::from_vars(|k| bad.get(k).cloned())
        .unwrap_err()
        .to_string();
    assert!(e.contains("STATESEAL_TTL"), "{e}");
    let _ = std::fs::remove_dir_all(dir);
}

/// A `ready_timeout` past what a duration (or the monotonic clock) can hold
/// is a valid "wait as long as it takes": start-up used to panic converting it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ready_timeout_beyond_any_duration_waits_without_a_panic() {
    let dir = temp_dir("setup-huge-timeout");
    let kek = dir.join("kek.bin");
    LocalProvider::create_kek(&kek).expect("kek");
    for timeout in ["1e300", "1.8446744073709552e19"] {
        let text = format!(
            "store = 'file://{}'\naudience = 'svc'\nkek = 'local://{}'\ncreate_if_missing = true\nready_timeout = {timeout}\n",
            dir.join("keyset.json").display(),
            kek.display()
        );
        let config = Config::from_toml_str(&text).expect("config");
        let protection = start(&config, local_registry()).await.expect("start");
        assert!(protection.is_ready(), "{timeout}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_creates_waits_and_protects() {
    let dir = temp_dir("setup-start");
    let store = format!("file://{}", dir.join("keyset.json").display());
    let kek = dir.join("kek.bin");
    LocalProvider::create_kek(&kek).expect("kek");
    let text = format!(
        "store = '{store}'\naudience = 'svc'\nkek = 'local://{}'\ncreate_if_missing = true\nready_timeout = 2\n",
        kek.display()
    );
    let config = Config::from_toml_str(&text).expect("config");
    let protection = start(&config, local_registry()).await.expect("start");
    assert!(protection.is_ready());
    // Created (generation 1) with a v2 key, which seals without a budget: the
    // server wrote nothing more to start sealing.
    let doc = stateseal_testkit::keysets::content(
        &stateseal::FileStore::new(dir.join("keyset.json")),
        &local_registry(),
    )
    .await;
    assert_eq!(doc.generation, 1);
    assert_eq!(doc.keys[0].alg, stateseal::TokenFormat::V2);
    assert_eq!(doc.keys[0].seals_reserved, 0);
    let boundary = protection.boundary();
    let round = RequestIdentity::from_json("tools/call", br#"{"name":"t"}"#).expect("id");
    let sealed = boundary.seal(&round, "s", &Ok(None)).expect("seal");
    assert!(sealed.starts_with("v2."), "{sealed}");
    assert_eq!(
        boundary.open(&round, Some(&sealed), &Ok(None)),
        Ok(Some("s".to_owned()))
    );
    // A second instance finds the keyset and uses the same keys.
    let second = start(&config, local_registry())
        .await
        .expect("second instance");
    assert_eq!(
        second.boundary().open(&round, Some(&sealed), &Ok(None)),
        Ok(Some("s".to_owned()))
    );
    // A server whose registry was not asked for local KEKs refuses a keyset naming one.
    let strict = Config::from_toml_str(&format!(
        "store = '{store}'\naudience = 'svc'\nready_timeout = 0.3\n"
    ))
    .expect("config");
    let e = start(&strict, stateseal::ProviderRegistry::with_defaults())
        .await
        .expect_err("local KEK refused")
        .to_string();
    assert!(e.contains("allow_local_kek"), "{e}");

    // The keyset was created with this fleet's T (600 s); a server configured
    // for longer states refuses it rather than rotate keys out from under them.
    assert_eq!(doc.timing.map(|t| t.ttl), Some(Duration::from_secs(600)));
    let longer = Config::from_toml_str(
        &format!("{text}ttl = 900\nready_timeout = 0.3\n").replace("ready_timeout = 2\n", ""),
    )
    .expect("config");
    let e = start(&longer, local_registry())
        .await
        .expect_err("ttl longer than the keyset's T")
        .to_string();
    assert!(
        e.contains("timing") && e.contains("900s") && e.contains("600s"),
        "{e}"
    );

    // No keyset and nothing to create it with: a clear, bounded failure.
    let empty = Config::from_toml_str(&format!(
        "store = 'file://{}'\naudience = 'svc'\nready_timeout = 0.3",
        dir.join("none.json").display()
    ))
    .expect("config");
    let e = start(&empty, local_registry())
        .await
        .expect_err("no keyset")
        .to_string();
    assert!(
        e.contains("ready_timeout") && e.contains("stateseal init"),
        "{e}"
    );
    let unknown =
        Config::from_toml_str(
            "store = 's3://bucket/key'\naudience = 'svc'\nkeyset_id = 'ks_a'\nkeyset_keks = ['aws-kms://arn:aws:kms:eu-west-1:111122223333:key/']",
        )
        .expect("config");
    let e = start(&unknown, local_registry())
        .await
        .expect_err("unknown scheme")
        .to_string();
    assert!(
        e.contains("`store`") && e.contains("registered: file, local"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn single_use_rounds_need_a_replay_store() {
    let base = "store = 'file:///tmp/k.json'\naudience = 'svc'\n";
    let e = err(&format!("{base}single_use_tools = ['transfer']"));
    assert!(
        e.contains("`replay_store`") && e.contains("memory://"),
        "{e}"
    );
    let e = err(&format!("{base}replay_store = 'redis'"));
    assert!(e.contains("`replay_store`"), "{e}");
    let vars: HashMap<&str, String> = [
        ("STATESEAL_STORE", "file:///k.json".to_owned()),
        ("STATESEAL_AUDIENCE", "bank".to_owned()),
        (
            "STATESEAL_REPLAY_STORE",
            "redis://127.0.0.1:6379/0".to_owned(),
        ),
        ("STATESEAL_SINGLE_USE_TOOLS", "transfer, pay".to_owned()),
        ("STATESEAL_SINGLE_USE_RESOURCES", "bank://ledger".to_owned()),
    ]
    .into_iter()
    .collect();
    let config = Config::from_vars(|k| vars.get(k).cloned()).expect("config");
    assert_eq!(
        config.replay_store.as_deref(),
        Some("redis://127.0.0.1:6379/0")
    );
    assert_eq!(config.single_use_tools, ["transfer", "pay"]);
    assert_eq!(config.single_use_resources, ["bank://ledger"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_makes_the_configured_rounds_single_use() {
    let dir = temp_dir("setup-single-use");
    let kek = dir.join("kek.bin");
    LocalProvider::create_kek(&kek).expect("kek");
    let text = format!(
        "store = 'file://{}'\naudience = 'bank'\nkek = 'local://{}'\ncreate_if_missing = true\nready_timeout = 2\nreplay_store = 'memory://'\nsingle_use_tools = ['transfer']\n",
        dir.join("keyset.json").display(),
        kek.display()
    );
    let config = Config::from_toml_str(&text).expect("config");
    let protection = start(&config, local_registry()).await.expect("start");
    let boundary = protection.boundary();
    let transfer = RequestIdentity::from_json("tools/call", br#"{"name":"transfer"}"#).expect("id");
    let deploy = RequestIdentity::from_json("tools/call", br#"{"name":"deploy"}"#).expect("id");
    assert!(boundary.is_single_use(&transfer));
    assert!(!boundary.is_single_use(&deploy));
    let sealed = boundary.seal(&transfer, "s", &Ok(None)).expect("seal");
    assert_eq!(
        boundary.admit(&transfer, Some(&sealed), &Ok(None)).await,
        Ok(Some("s".to_owned()))
    );
    assert!(
        boundary
            .admit(&transfer, Some(&sealed), &Ok(None))
            .await
            .is_err()
    );
    // A scheme no registered replay store knows: refused at start, naming the field.
    let unknown =
        Config::from_toml_str(&text.replace("memory://", "memcached://h:1")).expect("config");
    let e = start(&unknown, local_registry())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`replay_store`") && e.contains("memcached"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// The replay keys' prefix comes from the adopted document's id, whether
/// the configuration pins it or not: instances that pin and instances that
/// do not record under one prefix (with the configuration's, each kind
/// would accept a state once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_keys_are_named_by_the_adopted_keyset_whatever_the_configuration_pins() {
    use stateseal::replay::{MemoryReplayStore, ReplayStore};
    use std::sync::{Arc, Mutex};
    let dir = temp_dir("setup-replay-prefix");
    let kek = dir.join("kek.bin");
    LocalProvider::create_kek(&kek).expect("kek");
    let base = format!(
        "store = 'file://{}'\naudience = 'bank'\nkek = 'local://{}'\ncreate_if_missing = true\nready_timeout = 2\nreplay_store = 'probe://x'\nsingle_use_tools = ['transfer']\n",
        dir.join("keyset.json").display(),
        kek.display()
    );
    let opened = Arc::new(Mutex::new(Vec::<String>::new()));
    let registry = || {
        let mut r = local_registry();
        let seen = Arc::clone(&opened);
        r.register_replay_store("probe", move |_, prefix| {
            seen.lock().expect("lock").push(prefix.to_owned());
            Ok(Arc::new(MemoryReplayStore::new()) as Arc<dyn ReplayStore>)
        });
        r
    };
    let unpinned = start(&Config::from_toml_str(&base).expect("config"), registry())
        .await
        .expect("start");
    let id = unpinned.scheduler().keyset_id().expect("adopted");
    let pinned_text = format!(
        "{base}keyset_id = '{id}'\nkeyset_keks = ['local://{}']\n",
        kek.display()
    );
    let pinned = start(
        &Config::from_toml_str(&pinned_text).expect("config"),
        registry(),
    )
    .await
    .expect("start");
    assert_eq!(pinned.scheduler().keyset_id().as_deref(), Some(id.as_str()));
    let want = format!("stateseal:replay:{id}:");
    let opened = opened.lock().expect("lock").clone();
    let used: Vec<&String> = opened.iter().filter(|p| !p.contains(":check:")).collect();
    assert_eq!(used, [&want, &want], "{opened:?}");
}
