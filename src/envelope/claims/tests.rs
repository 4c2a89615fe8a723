use super::*;
use crate::random::RandomSource;

fn payloads(identity: &RequestIdentity, p_claim: &str) -> Vec<(Vec<u8>, bool, bool)> {
    let mut out = Vec::new();
    for state in [
        "",
        "step-2",
        "{\"k\":[1,2]}\n",
        "caf\u{e9} \u{1f600}",
        "x\\y",
    ] {
        for (aud, with_p) in [(None, false), (Some("svc"), false), (Some("svc"), true)] {
            let payload = write_payload(
                &MintClaims {
                    iat: 1_700_000_000.25,
                    exp: 1_700_000_600.25,
                    identity,
                    state: state.as_bytes(),
                    state_plain: is_plain_ascii(state.as_bytes()),
                    audience: aud,
                    principal_claim: with_p.then_some(p_claim),
                    single_use: None,
                },
                0,
                16,
                Vec::new(),
            );
            // Room for the codec's tag: sealing in place must not reallocate.
            assert!(
                payload.capacity() - payload.len() >= 16,
                "{state:?} {aud:?} {with_p}"
            );
            out.push((payload, aud.is_some(), with_p));
        }
    }
    out
}

/// The payload's room is reserved once, exactly enough for the escaped
/// strings: the buffer never grows while plaintext is written into it (a
/// grown buffer leaves the plaintext written so far in the memory it
/// released), and the written state reads back unchanged.
#[test]
fn escaped_states_are_written_without_the_buffer_growing() {
    let identity =
        RequestIdentity::from_json("tools/call", br#"{"name":"t\u0001","arguments":{}}"#).unwrap();
    for state in [
        "\u{1}".repeat(1000),
        "\"\\".repeat(700),
        "\u{e9}\u{20ac}\u{1f600}".repeat(300),
        "plain".repeat(100),
    ] {
        let payload = write_payload(
            &MintClaims {
                iat: 1_700_000_000.25,
                exp: 1_700_000_600.25,
                identity: &identity,
                state: state.as_bytes(),
                state_plain: is_plain_ascii(state.as_bytes()),
                audience: Some("svc\u{2}"),
                principal_claim: None,
                single_use: None,
            },
            40,
            16,
            Vec::new(),
        );
        let spare = payload.capacity() - payload.len();
        assert!(
            (16..=16 + 128).contains(&spare),
            "{spare} bytes spare of {}: the buffer grew while being written",
            payload.capacity()
        );
        let v: serde_json::Value = serde_json::from_slice(&payload[40..]).unwrap();
        assert_eq!(v["s"], state.as_str());
        assert_eq!(v["aud"], "svc\u{2}");
    }
}

/// A state's plainness is found by the minter (`mint` scans it once for its
/// UTF-8 check and its claims); the writer's fast path for a plain state
/// writes the same payload as its escaping path.
#[test]
fn a_plain_state_writes_the_same_payload_on_the_fast_and_the_escaping_path() {
    let identity = RequestIdentity::from_json("tools/call", br#"{"name":"t"}"#).unwrap();
    for state in [
        String::new(),
        "plain state".repeat(40),
        "x".repeat(5000),
        "quote \" and backslash \\".into(),
        "caf\u{e9}".repeat(100),
        "\u{1}control".into(),
    ] {
        let write = |state_plain| {
            write_payload(
                &MintClaims {
                    iat: 1_700_000_000.25,
                    exp: 1_700_000_600.25,
                    identity: &identity,
                    state: state.as_bytes(),
                    state_plain,
                    audience: Some("svc"),
                    principal_claim: None,
                    single_use: None,
                },
                40,
                16,
                Vec::new(),
            )
        };
        let given = write(is_plain_ascii(state.as_bytes()));
        assert_eq!(given, write(false), "{state:?}");
        let v: serde_json::Value = serde_json::from_slice(&given[40..]).unwrap();
        assert_eq!(v["s"], state.as_str());
    }
}

/// A custom codec naming a payload outside its buffer fails closed.
#[test]
fn payload_range_outside_the_buffer_rejects() {
    let identity = RequestIdentity::from_json("tools/call", b"{}").unwrap();
    #[allow(clippy::reversed_empty_ranges)]
    for at in [2..9, 4..3] {
        assert_eq!(
            check(
                vec![b'{'; 4],
                at,
                &identity,
                None,
                None,
                0.0,
                FUTURE_SKEW_SECS
            ),
            Err(reject(RejectReason::CodecError))
        );
    }
}

/// The state's closing quote is where `tail_len` says, for every layout minted.
#[test]
fn tail_len_measures_what_write_payload_writes() {
    let identity = RequestIdentity::from_json("tools/call", br#"{"name":"t"}"#).unwrap();
    let p_claim = principal::claim(&Principal::new("alice"), &RandomSource::Os).unwrap();
    assert_eq!(p_claim.len(), principal::CLAIM_LEN);
    for (payload, with_aud, with_p) in payloads(&identity, &p_claim) {
        let head = payload.windows(5).position(|w| w == b"\"s\":\"").unwrap() + 4;
        // A cursor at the state's opening quote (offsets relative to it).
        let at_state = || Cursor::new(&payload[head..]);
        if at_state().plain_string().is_none() {
            continue; // escaped states take the general string path
        }
        let end = payload.len() - 1 - tail_len(with_aud.then_some("svc"), with_p) - head;
        assert_eq!(
            at_state().plain_string_ending_at(end).map(<[u8]>::len),
            Some(end - 1)
        );
    }
}

/// The layout shortcut must agree with the general check on every input:
/// minted payloads, and every single-byte deletion, duplication and
/// substitution of them, at times before, inside and after the lifetime.
#[test]
fn minted_layout_shortcut_agrees_with_the_general_check() {
    let identity = RequestIdentity::from_json(
        "tools/call",
        br#"{"name":"deploy","arguments":{"env":"prod"}}"#,
    )
    .unwrap();
    let principal = Principal::new("alice");
    let p_claim = principal::claim(&principal, &RandomSource::Os).unwrap();
    let (mut shortcut, mut compared) = (0, 0);
    for (payload, with_aud, with_p) in payloads(&identity, &p_claim) {
        let audience = with_aud.then_some("svc");
        let who = with_p.then_some(&principal);
        let now = 1_700_000_100.0;
        // Every minted layout takes the shortcut.
        assert!(
            check_minted_layout(&payload, &identity, audience, who, now, FUTURE_SKEW_SECS)
                .is_some()
        );
        let mut variants = vec![payload.clone()];
        for i in 0..payload.len() {
            let mut v = payload.clone();
            v.remove(i);
            variants.push(v);
            let mut v = payload.clone();
            v.insert(i, payload[i]);
            variants.push(v);
            for b in [
                b' ', b'"', b'\\', b'0', b'9', b'x', b'}', b',', b'.', b'e', 0x80, 0x01,
            ] {
                let mut v = payload.clone();
                v[i] = b;
                variants.push(v);
            }
        }
        for (n, v) in variants.into_iter().enumerate() {
            // The times only matter for the unmutated payload.
            let times: &[f64] = if n == 0 {
                &[1_699_999_000.0, now, 1_700_000_600.25, 1_700_009_000.0]
            } else {
                &[now]
            };
            for &now in times {
                // Also with the other principal / audience expectations.
                for (aud, p) in [
                    (audience, who),
                    (None, None),
                    (Some("svc"), Some(&principal)),
                ] {
                    let general = check_any_layout(&v, &identity, aud, p, now, FUTURE_SKEW_SECS);
                    // Also with the payload inside a larger buffer, as the codec hands it over.
                    let mut framed = vec![b'"'; 5];
                    framed.extend_from_slice(&v);
                    framed.push(b'}');
                    let at = 5..5 + v.len();
                    let fast = check(
                        v.clone(),
                        0..v.len(),
                        &identity,
                        aud,
                        p,
                        now,
                        FUTURE_SKEW_SECS,
                    );
                    let in_place = check(framed, at, &identity, aud, p, now, FUTURE_SKEW_SECS);
                    assert_eq!(in_place, fast);
                    assert_eq!(fast, general, "{}", String::from_utf8_lossy(&v));
                    shortcut += usize::from(
                        check_minted_layout(&v, &identity, aud, p, now, FUTURE_SKEW_SECS).is_some(),
                    );
                    compared += 1;
                }
            }
        }
    }
    // The comparison covered both paths substantially.
    assert!(
        shortcut > 1000 && compared > 5 * shortcut,
        "{shortcut} of {compared}"
    );
}
