//! No token, key, plaintext state or principal in any log line, error message or `Debug` output.

use std::sync::Arc;

use stateseal::{
    Envelope, Error, KeyRing, MintOptions, OpenOptions, Principal, RequestIdentity, RingHandle,
    Secret, UnixTime,
};
use stateseal_testkit::logs::Logs;

#[test]
fn secrets_never_reach_logs_errors_or_debug() {
    let logs = Logs::default();
    let subscriber = logs.subscriber_all();
    let mut seen = String::new();
    let secret_text = "k3y-MATERIAL-that-is-at-least-32-bytes-long";
    let state = "STATE-plaintext-do-not-log";
    let principal_text = r#"["client-PRINCIPAL","iss","subject-PRINCIPAL"]"#;
    let mut tokens = Vec::new();
    tracing::subscriber::with_default(subscriber, || {
        let secret = Secret::from_text(secret_text).expect("secret");
        let ring = Arc::new(RingHandle::new(
            KeyRing::from_secrets(std::slice::from_ref(&secret)).expect("ring"),
        ));
        let _ephemeral = KeyRing::ephemeral().expect("ephemeral"); // logs its warning
        let envelope = Envelope::builder(ring.clone(), Some("svc"))
            .build()
            .expect("env");
        let id = RequestIdentity::from_json(
            "tools/call",
            br#"{"name":"deploy","arguments":{"env":"ARG-value"}}"#,
        )
        .expect("id");
        let other = RequestIdentity::from_json(
            "tools/call",
            br#"{"name":"deploy","arguments":{"env":"x"}}"#,
        )
        .expect("id");
        let p = Principal::new(principal_text);
        let token = envelope
            .mint(&id, state, MintOptions::new().principal(&p))
            .expect("mint");
        tokens.push(token.clone());
        let failures: Vec<Error> = vec![
            envelope
                .open(&other, &token, OpenOptions::new().principal(&p))
                .map(|o| o.state)
                .expect_err("binding"),
            envelope
                .open(&id, &token, OpenOptions::new())
                .map(|o| o.state)
                .expect_err("drift"),
            envelope
                .open(
                    &id,
                    &token,
                    OpenOptions::new().principal(&Principal::new("mallory")),
                )
                .map(|o| o.state)
                .expect_err("principal"),
            envelope
                .open(&id, format!("{token}A"), OpenOptions::new().principal(&p))
                .map(|o| o.state)
                .expect_err("malformed"),
            envelope
                .open(
                    &id,
                    &token,
                    OpenOptions::new()
                        .principal(&p)
                        .at(UnixTime::from_secs(4_000_000_000)),
                )
                .map(|o| o.state)
                .expect_err("expired"),
            KeyRing::from_bytes(vec![b"short-SECRET".to_vec()]).expect_err("short"),
        ];
        for e in &failures {
            seen.push_str(&format!("{e}\n{e:?}\n"));
        }
        seen.push_str(&format!("{secret:?} {ring:?} {envelope:?} {id:?} {p:?}"));
        seen.push_str(&format!(
            "{:?}",
            envelope
                .open(&id, &token, OpenOptions::new().principal(&p))
                .map(|o| o.state)
                .expect("ok")
        ));
    });
    let logs = logs.text();
    assert!(logs.contains("ephemeral"), "the capture works: {logs}");
    let everything = format!("{logs}\n{seen}");
    let key_hex = hex::encode(secret_text);
    for needle in [
        secret_text,
        &key_hex,
        state,
        "PRINCIPAL",
        "ARG-value",
        "SECRET",
        tokens[0].as_str(),
        &tokens[0][3..20],
    ] {
        assert!(
            !everything.contains(needle),
            "{needle:?} leaked into:\n{everything}"
        );
    }
}
