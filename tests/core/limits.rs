//! Configurable verification limits: the token length cap (checked before any
//! decoding) and the future-`iat` allowance that follows the fleet's max skew.

use std::sync::Arc;
use std::time::Duration;

use stateseal::{
    DEFAULT_MAX_TOKEN_LEN, DataError, Envelope, Error, FUTURE_SKEW, KeyRing, MintOptions,
    OpenOptions, RejectReason, RequestIdentity, RingHandle, Secret, UnixTime,
};

const NOW: UnixTime = UnixTime::from_secs(1_782_345_600);

fn codec() -> Arc<RingHandle> {
    let ring = KeyRing::from_secrets(&[Secret::new(vec![9; 32]).expect("key")]).expect("ring");
    Arc::new(RingHandle::new(ring))
}

fn id() -> RequestIdentity {
    RequestIdentity::from_json("tools/call", br#"{"name":"t","arguments":{}}"#).expect("id")
}

fn reason(r: Result<stateseal::json::Text, Error>) -> Option<RejectReason> {
    r.err().and_then(|e| e.reject_reason())
}

#[test]
fn tokens_longer_than_max_token_len_are_rejected_before_decoding() {
    let codec = codec();
    let small = Envelope::builder(codec.clone(), Some("svc"))
        .max_token_len(1024)
        .build()
        .expect("env");
    let token = small
        .mint(&id(), [b'x'; 600], MintOptions::new().at(NOW))
        .expect("fits");
    assert!(token.len() <= 1024);
    assert!(
        small
            .open(&id(), &token, OpenOptions::new().at(NOW))
            .map(|o| o.state)
            .is_ok()
    );
    // A state whose token would not fit is refused at mint time, not sent out to die.
    let err = small
        .mint(&id(), [b'x'; 900], MintOptions::new().at(NOW))
        .unwrap_err();
    assert!(err.to_string().contains("max_token_len"), "{err}");
    // An over-long echo is malformed, whatever it holds (here: a valid token, padded out).
    let big = Envelope::builder(codec, Some("svc")).build().expect("env");
    let long = big
        .mint(&id(), [b'x'; 900], MintOptions::new().at(NOW))
        .expect("mint");
    assert!(
        big.open(&id(), &long, OpenOptions::new().at(NOW))
            .map(|o| o.state)
            .is_ok()
    );
    assert_eq!(
        reason(
            small
                .open(&id(), &long, OpenOptions::new().at(NOW))
                .map(|o| o.state)
        ),
        Some(RejectReason::Malformed)
    );
    let huge = "v1.".to_owned() + &"A".repeat(DEFAULT_MAX_TOKEN_LEN);
    assert_eq!(
        reason(
            big.open(&id(), &huge, OpenOptions::new().at(NOW))
                .map(|o| o.state)
        ),
        Some(RejectReason::Malformed)
    );
    let err = Envelope::builder(Arc::new(RingHandle::empty()), None)
        .max_token_len(10)
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("max_token_len"), "{err}");
}

#[test]
fn the_future_iat_allowance_follows_max_skew() {
    let codec = codec();
    let ahead = Envelope::builder(codec.clone(), Some("svc"))
        .build()
        .expect("env");
    // Minted by a clock 90 s ahead of the verifier's.
    let token = ahead
        .mint(
            &id(),
            b"s",
            MintOptions::new().at(NOW + Duration::from_secs(90)),
        )
        .expect("mint");
    let default = Envelope::builder(codec.clone(), Some("svc"))
        .build()
        .expect("env");
    assert_eq!(
        FUTURE_SKEW,
        Duration::from_secs(60),
        "the Python SDK's value"
    );
    assert_eq!(
        reason(
            default
                .open(&id(), &token, OpenOptions::new().at(NOW))
                .map(|o| o.state)
        ),
        Some(RejectReason::MintedInFuture)
    );
    let wide = Envelope::builder(codec.clone(), Some("svc"))
        .max_skew(Duration::from_secs(120))
        .build()
        .expect("env");
    assert!(
        wide.open(&id(), &token, OpenOptions::new().at(NOW))
            .map(|o| o.state)
            .is_ok()
    );
    let narrow = Envelope::builder(codec.clone(), Some("svc"))
        .max_skew(Duration::from_secs(5))
        .build()
        .expect("env");
    let slightly = ahead
        .mint(
            &id(),
            b"s",
            MintOptions::new().at(NOW + Duration::from_secs(10)),
        )
        .expect("mint");
    assert!(
        default
            .open(&id(), &slightly, OpenOptions::new().at(NOW))
            .map(|o| o.state)
            .is_ok()
    );
    assert_eq!(
        reason(
            narrow
                .open(&id(), &slightly, OpenOptions::new().at(NOW))
                .map(|o| o.state)
        ),
        Some(RejectReason::MintedInFuture)
    );
    // A negative, NaN or infinite skew, which the builder refused, is no longer
    // expressible: `max_skew` takes a `Duration`.
    for bad in [-1.0, f64::NAN, f64::INFINITY] {
        assert!(Duration::try_from_secs_f64(bad).is_err(), "{bad}");
    }
}

#[test]
fn mint_takes_wtf8_states_only_and_gives_back_exactly_what_it_took() {
    let env = Envelope::builder(codec(), Some("svc"))
        .build()
        .expect("env");
    let (high, low) = (b"\xed\xa4\x85".as_slice(), b"\xed\xb4\x85".as_slice());
    let accepted: [Vec<u8>; 5] = [
        [b"a", high, b"b"].concat(),
        [low, b"a"].concat(),
        [low, high].concat(),
        [high, high, b"\t"].concat(),
        [b"\xf0\x91\x94\x85", high].concat(),
    ];
    for state in &accepted {
        let token = env
            .mint(&id(), state, MintOptions::new().at(NOW))
            .expect("a WTF-8 state mints");
        let back = env
            .open(&id(), &token, OpenOptions::new().at(NOW))
            .map(|o| o.state)
            .expect("verifies");
        assert_eq!(back.as_bytes(), state.as_slice());
    }
    // Not WTF-8: stray bytes, a cut sequence, and a surrogate pair written as two
    // surrogates (it would come back as the one code point U+51505, so it is refused).
    let refused: [Vec<u8>; 4] = [
        b"\xff".to_vec(),
        b"a\xe2\x82".to_vec(),
        [high, low].concat(),
        [b"\t\t", high, b"\t\0", high, low].concat(),
    ];
    for state in &refused {
        let err = env
            .mint(&id(), state, MintOptions::new().at(NOW))
            .unwrap_err();
        assert!(matches!(err, Error::Data(DataError::Seal(_))), "{err:?}");
        assert_eq!(
            err.to_string(),
            "sealing requestState failed: state is neither UTF-8 nor WTF-8"
        );
    }
}
