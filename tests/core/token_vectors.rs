//! `v2.` token vectors from `tests/data/stateseal-v2-tokens.json`, computed by
//! `scripts/v2_token_vectors.py` with the `cryptography` package from the wire
//! format alone: stateseal derives the same key id, seals exactly the same
//! token from the same secret, nonce and payload, and opens it; the same
//! secret as a `v1.` key neither names nor opens it.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value as J;
use stateseal::{
    AesGcmCodec, KeyId, KeyRing, RandomSource, RingHandle, RingKey, Secret, StateCodec, TokenFormat,
};

fn cases() -> Vec<J> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/stateseal-v2-tokens.json");
    let raw = std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let v: J = serde_json::from_slice(&raw).expect("json");
    v["cases"].as_array().expect("cases").clone()
}

fn field<'a>(c: &'a J, k: &str) -> &'a str {
    c[k].as_str().unwrap_or_else(|| panic!("{k} in {c}"))
}

#[test]
fn v2_tokens_match_an_independent_implementation() {
    let cases = cases();
    assert!(cases.len() >= 3);
    for c in &cases {
        let name = field(c, "name");
        let secret =
            Secret::new(hex::decode(field(c, "secret_hex")).expect("hex")).expect("secret");
        let kid = KeyId::of_format(&secret, TokenFormat::V2);
        assert_eq!(kid.to_hex(), field(c, "kid_hex"), "{name}: kid");
        let key = Arc::new(RingKey::with_format(&secret, TokenFormat::V2));
        let ring = Arc::new(RingHandle::new(
            KeyRing::from_keys(vec![key]).expect("ring"),
        ));
        let nonce = hex::decode(field(c, "nonce_hex")).expect("hex");
        let codec =
            AesGcmCodec::new(ring.clone()).with_random_source(RandomSource::scripted(vec![nonce]));
        let payload = field(c, "payload").as_bytes();
        let token = codec.seal(payload).expect("seal");
        assert_eq!(token, field(c, "token"), "{name}: token");
        assert_eq!(
            AesGcmCodec::new(ring).unseal(&token).expect("open"),
            payload,
            "{name}"
        );
        // The same secret as a v1 key: another key id, and the token does not open.
        let v1 = AesGcmCodec::new(Arc::new(RingHandle::new(
            KeyRing::from_secrets(&[secret]).expect("ring"),
        )));
        assert!(
            v1.unseal(&token).is_err(),
            "{name}: opened under the v1 key"
        );
        assert!(
            v1.unseal(&format!("v1.{}", &token[3..])).is_err(),
            "{name}: relabelled"
        );
    }
}
