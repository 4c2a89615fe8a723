//! The envelope's forms that work in the caller's buffers (`mint_into`,
//! `open` with a buffer, what the Node binding seals and opens through): the same
//! tokens and the same verdicts as `mint` and `open`, with buffers
//! kept from earlier calls, whatever they held.

use std::sync::Arc;
use std::time::Duration;

use stateseal::{
    Envelope, Error, KeyRing, MintOptions, OpenOptions, Opened, Principal, RejectReason,
    RequestIdentity, RingHandle, RingKey, Secret, TokenFormat, UnixTime,
};

const NOW: UnixTime = UnixTime::from_secs(1_782_345_600);

fn envelope(format: TokenFormat) -> Envelope {
    let key = RingKey::with_format(&Secret::new(vec![4; 32]).expect("key"), format);
    let ring = KeyRing::from_keys(vec![Arc::new(key)]).expect("ring");
    Envelope::builder(Arc::new(RingHandle::new(ring)), Some("svc"))
        .ttl(Duration::from_secs(60))
        .max_token_len(40_000)
        .build()
        .expect("envelope")
}

fn id(name: &str) -> RequestIdentity {
    let params = format!(r#"{{"name":"{name}","arguments":{{"n":1}}}}"#);
    RequestIdentity::from_json("tools/call", params.as_bytes()).expect("id")
}

fn reason<T>(r: Result<T, Error>) -> Option<RejectReason> {
    r.err().and_then(|e| e.reject_reason())
}

#[test]
fn the_same_states_come_back_through_kept_buffers() {
    let alice = Principal::from_components("client", Some("https://issuer.example"), Some("alice"));
    let states: [Vec<u8>; 6] = [
        Vec::new(),
        b"x".repeat(1024),
        "Zürich \u{1f600} \"quoted\" \\ \n".as_bytes().to_vec(),
        b"a\xed\xa4\x85b".to_vec(),
        b"y".repeat(20_000),
        b"short".to_vec(),
    ];
    for format in [TokenFormat::V1, TokenFormat::V2] {
        let env = envelope(format);
        // One token buffer and one state buffer for every call, as the binding keeps them.
        let mut token = Vec::new();
        let mut kept = vec![0xee; 5000];
        for state in &states {
            for principal in [None, Some(&alice)] {
                env.mint_into(
                    &id("t"),
                    state,
                    MintOptions::new().principal(principal).at(NOW),
                    &mut token,
                )
                .expect("mints");
                let text = String::from_utf8(token.clone()).expect("a token is ASCII");
                assert!(text.starts_with(format.prefix()));
                let verified = env
                    .open(
                        &id("t"),
                        &text,
                        OpenOptions::new().principal(principal).at(NOW),
                    )
                    .map(|o| o.state)
                    .expect("verifies");
                assert_eq!(verified.as_bytes(), state.as_slice());
                let Opened {
                    state: opened,
                    single_use: once,
                    ..
                } = env
                    .open(
                        &id("t"),
                        text.as_bytes(),
                        OpenOptions::new()
                            .principal(principal)
                            .at(NOW)
                            .records_single_use(true)
                            .buffer(kept),
                    )
                    .expect("opens");
                assert_eq!(
                    (opened.as_bytes(), once.is_none()),
                    (state.as_slice(), true)
                );
                kept = opened.into_bytes();
                // A token of the usual form opens the same way through a kept buffer.
                let usual = env
                    .mint(
                        &id("t"),
                        state,
                        MintOptions::new().principal(principal).at(NOW),
                    )
                    .expect("mints");
                assert_eq!(usual.len(), text.len());
                let Opened { state: opened, .. } = env
                    .open(
                        &id("t"),
                        usual.as_bytes(),
                        OpenOptions::new()
                            .principal(principal)
                            .at(NOW)
                            .records_single_use(true)
                            .buffer(kept),
                    )
                    .expect("opens");
                assert_eq!(opened.as_bytes(), state.as_slice());
                kept = opened.into_bytes();
            }
        }
    }
}

#[test]
fn refusals_are_the_same_and_leave_no_token_behind() {
    let env = envelope(TokenFormat::V2);
    let mut token = b"an earlier token".to_vec();
    // Not WTF-8: refused before anything is sealed, with `mint`'s error.
    let err = env
        .mint_into(&id("t"), b"a\xff", MintOptions::new().at(NOW), &mut token)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "sealing requestState failed: state is neither UTF-8 nor WTF-8"
    );
    assert!(token.is_empty());
    // Too large for max_token_len: refused, and the sealed bytes are not left in the buffer.
    token.extend_from_slice(b"an earlier token");
    let err = env
        .mint_into(
            &id("t"),
            [b'z'; 40_000],
            MintOptions::new().at(NOW),
            &mut token,
        )
        .unwrap_err();
    assert!(err.to_string().contains("max_token_len"), "{err}");
    assert!(token.is_empty());

    env.mint_into(&id("t"), b"state", MintOptions::new().at(NOW), &mut token)
        .expect("mints");
    let good = String::from_utf8(token).expect("ASCII");
    let alice = Principal::from_components("client", None, Some("alice"));
    let cases: [(&str, RequestIdentity, Option<&Principal>, UnixTime); 4] = [
        (&good, id("other"), None, NOW),
        (&good, id("t"), Some(&alice), NOW),
        (&good, id("t"), None, NOW + Duration::from_secs(61)),
        (&good[..good.len() - 2], id("t"), None, NOW),
    ];
    for (text, identity, principal, at) in cases {
        let usual = reason(
            env.open(
                &identity,
                text,
                OpenOptions::new()
                    .principal(principal)
                    .at(at)
                    .records_single_use(true),
            ),
        );
        assert!(usual.is_some());
        let into = reason(
            env.open(
                &identity,
                text.as_bytes(),
                OpenOptions::new()
                    .principal(principal)
                    .at(at)
                    .records_single_use(true)
                    .buffer(vec![7; 300]),
            ),
        );
        assert_eq!(into, usual);
    }
    // Bytes that are no text (a binding's bytes: not ASCII) are malformed; and past
    // max_token_len refused before they are decoded, as a text token is.
    let mut bad = good.clone().into_bytes();
    bad[5] = 0xff;
    assert_eq!(
        reason(
            env.open(
                &id("t"),
                &bad,
                OpenOptions::new()
                    .at(NOW)
                    .records_single_use(true)
                    .buffer(Vec::new())
            )
        ),
        Some(RejectReason::Malformed)
    );
    // A prefix and a body of a length base64url can have: without the limit
    // it would be decoded, and refused for its unknown key instead.
    let mut long = b"v2.".to_vec();
    long.resize(3 + (stateseal::DEFAULT_MAX_TOKEN_LEN / 4 + 1) * 4, b'A');
    assert_eq!(
        reason(
            env.open(
                &id("t"),
                &long,
                OpenOptions::new()
                    .at(NOW)
                    .records_single_use(true)
                    .buffer(Vec::new())
            )
        ),
        Some(RejectReason::Malformed)
    );
    // Single-use states come back with their record, as through `open`.
    let once = env
        .mint(
            &id("t"),
            b"once",
            MintOptions::new().at(NOW).single_use(true),
        )
        .expect("mints");
    let Opened {
        state,
        single_use: record,
        ..
    } = env
        .open(
            &id("t"),
            once.as_bytes(),
            OpenOptions::new()
                .at(NOW)
                .records_single_use(true)
                .buffer(Vec::new()),
        )
        .expect("opens");
    assert_eq!((state.as_bytes(), record.is_some()), (&b"once"[..], true));
}
