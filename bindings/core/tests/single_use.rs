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

/// What the Python SDK's `RequestStateBoundary._seal` hands the codec
/// (issued now: the replay store made at start holds records since then).
fn sdk_payload(tool: &str) -> Vec<u8> {
    sdk_payload_with(tool, "state")
}

/// As [`sdk_payload`], with `state` (JSON string contents, escapes as the SDK writes them).
fn sdk_payload_with(tool: &str, state: &str) -> Vec<u8> {
    let iat = stateseal::Clock::now(&stateseal::SystemClock) + std::time::Duration::from_secs(1);
    format!(r#"{{"v":1,"iat":{iat},"exp":4000000000.5,"m":"tools/call","t":"{tool}","a":"x","s":"{state}","aud":"svc"}}"#)
        .into_bytes()
}

/// An instance treating `transfer` as single-use, on a `memory://` store.
fn single_use_instance(name: &str) -> Running {
    let dir = temp_dir(name);
    let store = format!("file://{}", dir.join("keyset.json").display());
    let mut named = settings(&dir);
    named.push(("replay_store", Setting::Text("memory://".into())));
    named.push(("single_use_tools", Setting::List(vec!["transfer".into()])));
    Running::start(&recipe(&store, "svc", named, str::to_owned).expect("recipe")).expect("start")
}

/// The SDK escapes a lone surrogate in the state (`compact_json`) on
/// purpose; a reader that refuses such JSON would seal a single-use round as
/// multi-use, verifiable any number of times.
#[test]
fn a_lone_surrogate_in_the_state_still_gets_the_single_use_claim() {
    let running = single_use_instance("surrogate");
    // The state `{"env": "<lone surrogate>"}`, as the SDK's compact_json writes it.
    let payload = sdk_payload_with("transfer", r#"{\"env\":\"\ud800\"}"#);
    assert!(
        serde_json::from_slice::<serde_json::Value>(&payload).is_err(),
        "serde_json refuses what the SDK writes"
    );
    let token = running.seal_claims(&payload).expect("seal");
    let (opened, once) = running.unseal_claims(&token).expect("unseal");
    let once = once.expect("sealed single-use");
    assert!(opened.starts_with(&payload[..payload.len() - 1]));
    assert_eq!(running.record(&once), Ok(()));
    assert_eq!(running.record(&once), Err(RejectReason::Replayed));
    assert_eq!(running.record(&once), Err(RejectReason::Replayed));
}

/// While single-use rounds are configured, a payload that cannot be read is
/// not sealed at all (an internal error for the SDK), never as multi-use.
#[test]
fn an_unreadable_payload_is_not_sealed_while_single_use_rounds_are_configured() {
    let running = single_use_instance("unreadable");
    for bad in [
        &b"{\"m\":\"tools/call\",\"t\":\"transfer\""[..],
        b"[\"tools/call\",\"transfer\"]",
        br#"{"v":1,"iat":1,"s":"no round named"}"#,
    ] {
        let e = running.seal_claims(bad).unwrap_err();
        assert!(e.to_string().contains("could not be read"), "{e}");
    }
}

/// A `transfer` state minted without the claim (by an instance without the
/// setting: the raw seal writes the SDK's bytes as they are) is refused by
/// an instance that treats the round as single-use, every time.
#[test]
fn a_state_of_a_single_use_round_without_the_claim_is_refused() {
    let running = single_use_instance("no-claim");
    let token = running.seal(&sdk_payload("transfer")).expect("raw seal");
    for _ in 0..3 {
        assert_eq!(
            running.unseal_claims(&token).unwrap_err(),
            stateseal::Error::Rejected(RejectReason::MissingSingleUseClaim)
        );
    }
    // Another round's state is untouched.
    let deploy = sdk_payload("deploy");
    let token = running.seal(&deploy).expect("raw seal");
    assert_eq!(
        running.unseal_claims(&token).expect("unseal"),
        (deploy, None)
    );
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
    let deploy = sdk_payload("deploy");
    let token = running.seal_claims(&deploy).expect("seal");
    assert_eq!(
        running.unseal_claims(&token).expect("unseal"),
        (deploy, None)
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
