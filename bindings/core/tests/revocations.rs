//! Revocations through the bindings' shared core, as the Python codec and the
//! Node codec's raw `unseal` ask them: which payloads are candidates (and
//! which are refused as malformed: fail closed), and which are covered for a
//! principal by the ring loaded now.

use stateseal::{
    Error, KeyRing, LocalProvider, Principal, RejectReason, Revocation, RevocationList, UnixTime,
};
use stateseal_binding::{Running, Setting, recipe};

fn instance(name: &str) -> Running {
    let dir = std::env::temp_dir().join(format!(
        "stateseal-binding-revocations-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let kek = dir.join("kek.bin");
    LocalProvider::create_kek(&kek).expect("kek");
    let store = format!("file://{}", dir.join("keyset.json").display());
    let named = vec![
        ("kek", Setting::Text(format!("local://{}", kek.display()))),
        ("create_if_missing", Setting::Bool(true)),
        ("allow_local_kek", Setting::Bool(true)),
        ("ready_timeout", Setting::Number(5.0)),
    ];
    Running::start(&recipe(&store, "svc", named, str::to_owned).expect("recipe")).expect("start")
}

fn ring() -> KeyRing {
    KeyRing::from_bytes(vec![vec![7; 32]]).expect("ring")
}

fn claims(iat: &str) -> Vec<u8> {
    format!(r#"{{"v":1,"iat":{iat},"exp":4000000000.5,"m":"tools/call","t":"x","a":"x","s":"s","aud":"svc"}}"#)
        .into_bytes()
}

fn secs(s: u64) -> UnixTime {
    UnixTime::from_secs(s)
}

#[test]
fn candidates_and_verdicts_are_the_seconds_and_a_non_finite_iat_is_malformed() {
    let running = instance("verdicts");
    let malformed = Err(Error::Rejected(RejectReason::Malformed));
    let alice = Principal::from_components("app", None, Some("alice"));
    let bob = Principal::from_components("app", None, Some("bob"));
    // No revocation: nothing is parsed, nothing is a candidate.
    for iat in ["1", "NaN", "Infinity", "-Infinity", "\"x\""] {
        assert_eq!(
            running.revocation_candidate(&claims(iat)),
            Ok(None),
            "{iat}"
        );
    }
    assert_eq!(running.revocation_candidate(b"not json"), Ok(None));

    running
        .codec
        .ring()
        .store(ring().with_revocations(RevocationList::new(&[
            Revocation::all_before(secs(100)),
            Revocation::principal(&alice, secs(200)),
        ])));
    let candidate = |iat: &str| running.revocation_candidate(&claims(iat));
    assert_eq!(candidate("50"), Ok(Some(secs(50))));
    assert_eq!(candidate("100"), Ok(Some(secs(100))));
    assert_eq!(candidate("150.5"), Ok(Some(UnixTime::from_millis(150_500))));
    assert_eq!(candidate("200"), Ok(Some(secs(200))));
    assert_eq!(candidate("200.001"), Ok(None));
    assert_eq!(candidate("-5"), Ok(UnixTime::from_secs_f64(-5.0)));
    for iat in ["\"100\"", "null", "true"] {
        assert_eq!(candidate(iat), malformed, "{iat}");
    }
    assert_eq!(running.revocation_candidate(b"not json"), malformed);
    assert_eq!(running.revocation_candidate(br#"{"v":1}"#), malformed);
    // Not finite: refused, never a state no revocation could cover.
    for iat in ["NaN", "-NaN", "Infinity", "-Infinity", "1e400", "-1e400"] {
        assert_eq!(candidate(iat), malformed, "{iat}");
    }

    let (a, b) = (Some(alice.as_bytes()), Some(bob.as_bytes()));
    for (iat, none, alice, bob) in [
        (secs(50), true, true, true),
        (secs(100), true, true, true),
        (secs(150), false, true, false),
        (secs(200), false, true, false),
        (UnixTime::from_millis(200_001), false, false, false),
        (UnixTime::EPOCH, true, true, true),
    ] {
        assert_eq!(running.revoked(iat, None), none, "{iat} unbound");
        assert_eq!(running.revoked(iat, a), alice, "{iat} alice");
        assert_eq!(running.revoked(iat, b), bob, "{iat} bob");
    }

    // The ring loaded now decides: one without revocations revokes nothing,
    // not even a state issued at the epoch.
    running.codec.ring().store(ring());
    for iat in [UnixTime::EPOCH, secs(50), secs(150)] {
        assert!(
            !running.revoked(iat, None) && !running.revoked(iat, a),
            "{iat}"
        );
    }
    running.codec.ring().clear();
    assert!(!running.revoked(secs(50), None));
    assert_eq!(candidate("50"), Ok(None));
}
