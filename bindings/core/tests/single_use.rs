//! Single-use states through the bindings' shared core: the settings reach
//! the configuration, SDK-written payloads of a single-use round get the `u`
//! claim, and recording it admits a state once (on a `memory://` store; the
//! Node and Python packages' tests run the same on a real Redis).

use stateseal::{LocalProvider, RejectReason};
use stateseal_binding::{Running, Setting, recipe};

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("stateseal-binding-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn settings(dir: &std::path::Path) -> Vec<(&'static str, Setting)> {
    let kek = dir.join("kek.bin");
    if !kek.exists() {
        LocalProvider::create_kek(&kek).expect("kek");
    }
    vec![
        ("kek", Setting::Text(format!("local://{}", kek.display()))),
        ("create_if_missing", Setting::Bool(true)),
        ("allow_local_kek", Setting::Bool(true)),
        ("ready_timeout", Setting::Number(5.0)),
    ]
}

/// What the Python SDK's `RequestStateBoundary._seal` hands the codec.
fn sdk_payload(tool: &str) -> Vec<u8> {
    format!(r#"{{"v":1,"iat":1.5,"exp":4000000000.5,"m":"tools/call","t":"{tool}","a":"x","s":"state","aud":"svc"}}"#)
        .into_bytes()
}

#[test]
fn single_use_rounds_are_sealed_with_the_claim_and_recorded_once() {
    let dir = temp_dir("once");
    let store = format!("file://{}", dir.join("keyset.json").display());
    let mut named = settings(&dir);
    named.push(("replay_store", Setting::Text("memory://".into())));
    named.push(("single_use_tools", Setting::List(vec!["transfer".into()])));
    let running = Running::start(&recipe(&store, "svc", named, str::to_owned).expect("recipe"))
        .expect("start");

    let token = running.seal_claims(&sdk_payload("transfer")).expect("seal");
    let (payload, once) = running.unseal_claims(&token).expect("unseal");
    let once = once.expect("a single-use state");
    assert!(payload.ends_with(b"\"}") && payload.windows(5).any(|w| w == b",\"u\":"));
    assert_eq!(running.record(&once), Ok(()));
    assert_eq!(running.record(&once), Err(RejectReason::Replayed));

    // Another tool's state stays multi-use, byte for byte what the SDK wrote.
    let token = running.seal_claims(&sdk_payload("deploy")).expect("seal");
    assert_eq!(
        running.unseal_claims(&token).expect("unseal"),
        (sdk_payload("deploy"), None)
    );
}

#[test]
fn single_use_needs_a_replay_store_and_a_payload_may_not_bring_its_own_claim() {
    let dir = temp_dir("settings");
    let store = format!("file://{}", dir.join("keyset.json").display());
    let mut named = settings(&dir);
    named.push(("single_use_prompts", Setting::List(vec!["confirm".into()])));
    let e = recipe(&store, "svc", named.clone(), str::to_owned).unwrap_err();
    assert!(e.contains("replay_store"), "{e}");
    named.push(("replay_store", Setting::Number(1.0)));
    let e = recipe(&store, "svc", named, str::to_owned).unwrap_err();
    assert!(
        e.contains("replay_store: expected a replay store URI"),
        "{e}"
    );

    let mut named = settings(&dir);
    named.push(("replay_store", Setting::Text("memory://".into())));
    named.push(("single_use_tools", Setting::List(vec!["transfer".into()])));
    let running = Running::start(&recipe(&store, "svc", named, str::to_owned).expect("recipe"))
        .expect("start");
    let mut own = sdk_payload("transfer");
    own.truncate(own.len() - 1);
    own.extend_from_slice(br#","u":"AAAAAAAAAAAAAAAAAAAAAA"}"#);
    assert!(running.seal_claims(&own).is_err());
}

#[test]
fn a_v1_primary_key_refuses_to_seal_single_use() {
    let dir = temp_dir("v1");
    let store_uri = format!("file://{}", dir.join("keyset.json").display());
    let mut named = settings(&dir);
    named.push(("replay_store", Setting::Text("memory://".into())));
    named.push(("single_use_tools", Setting::List(vec!["transfer".into()])));
    let recipe = recipe(&store_uri, "svc", named, str::to_owned).expect("recipe");
    drop(Running::start(&recipe).expect("start")); // creates the keyset
    // The keyset as a release before v2 keys wrote it.
    let registry = stateseal_providers::registry_from_env(true);
    let store = registry.open_store(&store_uri).expect("store");
    tokio::runtime::Runtime::new().expect("runtime").block_on(
        stateseal_testkit::keysets::with_v1_keys(store.as_ref(), &registry),
    );
    let running = Running::start(&recipe).expect("start");
    let e = running.seal_claims(&sdk_payload("transfer")).unwrap_err();
    assert!(e.to_string().contains("v2 key"), "{e}");
    assert!(
        running
            .seal_claims(&sdk_payload("deploy"))
            .expect("seal")
            .starts_with("v1.")
    );
}
