use super::*;
use crate::keyset::MAX_TIME;
use std::time::Duration;

#[test]
fn wrapped_keys_are_canonical_padded_base64() {
    assert_eq!(b64_decode("AQID").as_deref(), Some(&[1u8, 2, 3][..]));
    assert_eq!(b64_decode("QQ==").as_deref(), Some(&b"A"[..]));
    assert_eq!(b64_decode("+/8=").as_deref(), Some(&[0xfb, 0xff][..]));
    for bad in [
        "QQ", "QR==", "QQ=", "Q===", "-_8=", "QQ==QQ==", "AQ ID", "AQID\n",
    ] {
        assert_eq!(b64_decode(bad), None, "{bad:?}");
    }
    // Long enough for the vector kernels, with a non-canonical last character.
    let long = base64_turbo::STANDARD.encode([7u8; 64]);
    assert_eq!(b64_decode(&long).as_deref(), Some(&[7u8; 64][..]));
    let mut bent = long.into_bytes();
    let last = bent.len() - 3; // 64 bytes end in "Bw==": set one of the 4 unused bits of the "w"
    bent[last] = b'x';
    assert_eq!(b64_decode(std::str::from_utf8(&bent).unwrap()), None);
}

fn doc() -> Keyset {
    Keyset {
        id: "ks_abc".into(),
        generation: 3,
        timing: Some(Timing::new(
            Duration::from_secs(30),
            Duration::from_secs(60),
            Duration::from_secs(600),
        )),
        rotation_claim: None,
        revocations: Vec::new(),
        keys: vec![KeyEntry {
            entry: "k_1".into(),
            kid: KeyId::from_hex("a014f40b"),
            alg: TokenFormat::V1,
            kek: "local:///tmp/kek".into(),
            wrapped: vec![1, 2, 3],
            created_at: UnixTime::from_secs(1_782_345_600),
            activate_at: UnixTime::from_secs(1_782_345_600),
            retire_at: Some(UnixTime::from_millis(1782346600500)),
            seals_reserved: 0,
        }],
    }
}

#[test]
fn roundtrip() {
    let d = doc();
    let json = d.to_json();
    assert!(
        String::from_utf8_lossy(&json).contains("2026-06-25T00:16:40.5Z"),
        "{}",
        String::from_utf8_lossy(&json)
    );
    assert_eq!(Keyset::from_json(&json).unwrap(), d);
}

#[test]
fn seals_reserved_is_written_only_when_set() {
    let mut d = doc();
    assert!(!String::from_utf8_lossy(&d.to_json()).contains("seals_reserved"));
    d.keys[0].seals_reserved = 1 << 20;
    let json = d.to_json();
    assert!(String::from_utf8_lossy(&json).contains("\"seals_reserved\": 1048576"));
    assert_eq!(Keyset::from_json(&json).unwrap(), d);
    d.generation = u64::MAX;
    assert!(
        d.next_generation()
            .unwrap_err()
            .to_string()
            .contains("generation")
    );
}

#[test]
fn errors_name_the_field() {
    let mut v: serde_json::Value = serde_json::from_slice(&doc().to_json()).unwrap();
    type Mutation = Box<dyn Fn(&mut serde_json::Value)>;
    let cases: Vec<(Mutation, &str)> = vec![
        (
            Box::new(|v| v["format"] = "stateseal.keyset/v9".into()),
            "format",
        ),
        (
            Box::new(|v| v["keys"][0]["activate_at"] = "yesterday".into()),
            "keys[0].activate_at",
        ),
        (
            Box::new(|v| v["keys"][0]["wrapped"] = "***".into()),
            "keys[0].wrapped",
        ),
        (
            Box::new(|v| v["keys"][0]["kek"] = "no-scheme".into()),
            "keys[0].kek",
        ),
        (Box::new(|v| v["id"] = "abc".into()), "id"),
        (Box::new(|v| v["extra"] = 1.into()), "document"),
        (
            Box::new(|v| {
                let e = v["keys"][0].clone();
                v["keys"].as_array_mut().unwrap().push(e);
            }),
            "keys[1].entry",
        ),
        (
            Box::new(|v| v["keys"][0]["retire_at"] = "2020-01-01T00:00:00Z".into()),
            "keys[0].retire_at",
        ),
        (
            Box::new(|v| v["keys"][0]["kid"] = "a014".into()),
            "keys[0].kid",
        ),
        (
            Box::new(|v| v["timing"]["propagation"] = 1.into()),
            "timing",
        ),
        (Box::new(|v| v["timing"]["unknown"] = 1.into()), "document"),
        // Seconds that are no duration: refused as before durations held them.
        (
            Box::new(|v| v["timing"]["max_skew"] = (-1).into()),
            "timing",
        ),
        (
            Box::new(|v| v["timing"]["state_ttl"] = 1e12.into()),
            "timing",
        ),
    ];
    for (mutate, field) in cases {
        let mut bad = v.clone();
        mutate(&mut bad);
        let err = Keyset::from_json(&serde_json::to_vec(&bad).unwrap()).unwrap_err();
        assert!(
            matches!(&err, Error::Keyset(KeysetError::Invalid { field: f, .. }) if f == field),
            "{field}: {err}"
        );
    }
    v["keys"] = serde_json::json!([]);
    assert!(Keyset::from_json(&serde_json::to_vec(&v).unwrap()).is_err());
}

#[test]
fn times_must_be_representable() {
    // `--now` in milliseconds once wrote "invalid-time" into a document.
    // (A time that is not finite is no `UnixTime` at all.)
    for t in [1_782_345_600_000.0, -1.0] {
        let mut d = doc();
        d.keys[0].retire_at = UnixTime::from_secs_f64(t);
        let err = d.validate().unwrap_err();
        assert!(
            matches!(&err, Error::Keyset(KeysetError::Invalid { field, .. }) if field == "keys[0].retire_at"),
            "{t}: {err}"
        );
        assert!(err.to_string().contains("not milliseconds"), "{err}");
    }
    let mut d = doc();
    d.keys[0].created_at = MAX_TIME;
    d.keys[0].activate_at = MAX_TIME;
    d.keys[0].retire_at = None;
    assert_eq!(Keyset::from_json(&d.to_json()).unwrap(), d);
}

#[test]
fn documents_without_profile_or_key_ids_still_parse() {
    let mut d = doc();
    d.timing = None;
    d.keys[0].kid = None;
    let json = String::from_utf8(d.to_json()).unwrap();
    assert!(!json.contains("timing") && !json.contains("kid"), "{json}");
    assert_eq!(Keyset::from_json(json.as_bytes()).unwrap(), d);
}
