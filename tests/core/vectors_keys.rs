//! The Python SDK's key cases of `tests/data/python-mcp-2.3.0.json`: keys
//! derived and fingerprinted as Python does, and the same keys refused.

use std::sync::Arc;
use std::time::Duration;

use stateseal::{DataError, Envelope, Error, KeyRing, RingHandle, Secret, derived_key};

use crate::vectors::{s, vectors};

#[test]
fn keys_derive_and_fingerprint_like_python() {
    let v = vectors();
    let keys = v["keys"].as_array().expect("keys");
    assert_eq!(keys.len(), 9);
    for k in keys {
        let secret = match s(k, "secret_type") {
            "str" => Secret::from_text(s(k, "secret_text")).expect("text secret"),
            _ => Secret::new(hex::decode(s(k, "secret_hex")).expect("hex")).expect("secret"),
        };
        assert_eq!(
            hex::encode(secret.expose()),
            s(k, "secret_hex"),
            "{}",
            k["label"]
        );
        assert_eq!(
            hex::encode(*derived_key(&secret)),
            s(k, "derived_key_hex"),
            "{}",
            k["label"]
        );
        assert_eq!(
            stateseal::KeyId::of(&secret).to_string(),
            s(k, "kid_hex"),
            "{}",
            k["label"]
        );
    }
}

/// Parses the Python `repr` of a key list: `[b'..', '..', 32]` with `\xNN` escapes.
fn python_key_list(repr: &str) -> Vec<Result<Vec<u8>, ()>> {
    let inner = repr.trim_start_matches('[').trim_end_matches(']');
    let mut out = Vec::new();
    for item in inner.split(", ").filter(|i| !i.is_empty()) {
        let (is_bytes, body) = match item.strip_prefix('b') {
            Some(rest) => (true, rest),
            None => (false, item),
        };
        let Some(body) = body.strip_prefix('\'').and_then(|b| b.strip_suffix('\'')) else {
            out.push(Err(())); // not bytes or str: Rust's types cannot express it
            continue;
        };
        let mut bytes = Vec::new();
        let mut chars = body.chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                assert_eq!(chars.next(), Some('x'), "only \\x escapes in the vectors");
                let hex: String = chars.by_ref().take(2).collect();
                let cp = u32::from_str_radix(&hex, 16).expect("hex escape");
                if is_bytes {
                    bytes.push(cp as u8);
                } else {
                    let ch = char::from_u32(cp).expect("char");
                    bytes.extend_from_slice(ch.to_string().as_bytes());
                }
            } else {
                bytes.extend_from_slice(c.to_string().as_bytes());
            }
        }
        out.push(Ok(bytes));
    }
    out
}

#[test]
fn key_errors_match_python() {
    let v = vectors();
    let mut checked = 0;
    for case in v["key_errors"].as_array().expect("key_errors") {
        let label = s(case, "label");
        if label == "ttl_validation" {
            for t in case["cases"].as_array().expect("cases") {
                let ttl: f64 = s(t, "ttl_repr").parse().expect("ttl");
                let ring = Arc::new(RingHandle::new(
                    KeyRing::from_secrets(&[Secret::new(vec![1; 32]).expect("s")]).expect("r"),
                ));
                // A negative, NaN or infinite TTL is no `Duration`: refused
                // before the builder, as the builder refuses a zero one.
                let built = match Duration::try_from_secs_f64(ttl) {
                    Ok(ttl) => Envelope::builder(ring, None).ttl(ttl).build(),
                    Err(_) => Err(Error::Data(DataError::InvalidTtl)),
                };
                assert_eq!(built.is_ok(), t["ok"] == true, "ttl {ttl}");
                if let Err(e) = built {
                    assert_eq!(e, Error::Data(DataError::InvalidTtl));
                }
                checked += 1;
            }
            continue;
        }
        let items = python_key_list(s(case, "keys_repr"));
        if items.iter().any(Result::is_err) {
            // Python's TypeError for a non-bytes key: `Secret` only holds bytes, so this cannot be built.
            assert_eq!(s(case, "exception"), "TypeError", "{label}");
            checked += 1;
            continue;
        }
        let result = KeyRing::from_bytes(items.into_iter().flatten().collect());
        let err = result.expect_err(label);
        let msg = s(case, "message");
        match err {
            Error::Data(DataError::EmptyRing) => {
                assert!(msg.contains("requires at least one key"), "{label}")
            }
            Error::Data(DataError::KeyTooShort { .. })
            | Error::Data(DataError::DuplicateKey { .. }) => {
                assert!(
                    msg.starts_with(&err.to_string()),
                    "{label}: python {msg:?} vs rust {err}"
                )
            }
            other => panic!("{label}: unexpected {other}"),
        }
        checked += 1;
    }
    assert_eq!(checked, 13);
}
