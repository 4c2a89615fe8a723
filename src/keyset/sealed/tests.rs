use super::*;
use crate::keyset::KeyEntry;
use crate::secret::Secret;

fn sealed() -> StoredKeyset {
    let doc = Keyset {
        id: "ks_a".into(),
        generation: 2,
        timing: None,
        rotation_claim: None,
        revocations: Vec::new(),
        keys: vec![KeyEntry {
            entry: "k_1".into(),
            kid: crate::key::KeyId::from_hex("0a0b0c0d"),
            alg: crate::key::TokenFormat::V1,
            kek: "local:///k".into(),
            wrapped: vec![1, 2, 3],
            created_at: UnixTime::from_secs(1),
            activate_at: UnixTime::from_secs(1),
            retire_at: None,
            seals_reserved: 0,
        }],
    };
    let key = MacKey::from_secret(&Secret::new(vec![3; 32]).unwrap()).unwrap();
    let mac = MacKeyRef {
        kek: "local:///k".into(),
        wrapped: vec![4; 40],
    };
    StoredKeyset::seal(&doc, crate::clock::UnixTime::from_secs(100), &mac, &key).unwrap()
}

#[test]
fn the_envelope_is_read_without_its_payload_and_errors_name_the_field() {
    let s = sealed();
    assert_eq!(
        (s.id(), s.generation(), s.is_authenticated()),
        ("ks_a", 2, true)
    );
    assert_eq!(StoredKeyset::from_bytes(s.bytes()).unwrap(), s);
    let v: serde_json::Value = serde_json::from_slice(s.bytes()).unwrap();
    type Edit = Box<dyn Fn(&mut serde_json::Value)>;
    let cases: Vec<(Edit, &str)> = vec![
        (
            Box::new(|v| v["format"] = "stateseal.keyset/v3".into()),
            "format",
        ),
        (Box::new(|v| v["id"] = "nope".into()), "id"),
        (Box::new(|v| v["payload"] = "***".into()), "payload"),
        (Box::new(|v| v["mac"]["tag"] = "AAAA".into()), "mac.tag"),
        (Box::new(|v| v["mac"]["wrapped"] = "".into()), "mac.wrapped"),
        (
            Box::new(|v| v["mac"]["kek"] = "no-scheme".into()),
            "mac.kek",
        ),
        (Box::new(|v| v["extra"] = 1.into()), "document"),
    ];
    for (edit, field) in cases {
        let mut bad = v.clone();
        edit(&mut bad);
        let err = StoredKeyset::from_bytes(&serde_json::to_vec(&bad).unwrap()).unwrap_err();
        assert!(
            matches!(&err, Error::Keyset(KeysetError::Invalid { field: f, .. }) if f == field),
            "{field}: {err}"
        );
    }
    // An entry without its key id cannot be authenticated.
    let mut doc = Keyset::from_payload(
        &base64_turbo::STANDARD
            .decode(v["payload"].as_str().unwrap())
            .unwrap(),
    )
    .unwrap()
    .0;
    doc.keys[0].kid = None;
    let key = MacKey::from_secret(&Secret::new(vec![3; 32]).unwrap()).unwrap();
    let mac = s.mac_key_ref().unwrap().clone();
    let err =
        StoredKeyset::seal(&doc, crate::clock::UnixTime::from_secs(100), &mac, &key).unwrap_err();
    assert!(
        matches!(&err, Error::Keyset(KeysetError::Invalid { field, .. }) if field == "keys[0].kid"),
        "{err}"
    );
}

#[test]
fn size_is_capped_before_anything_is_parsed() {
    let mut big = b"{\"format\":\"stateseal.keyset/v2\"".to_vec();
    big.resize(MAX_DOCUMENT_BYTES + 1, b' ');
    let err = StoredKeyset::from_bytes(&big).unwrap_err();
    assert!(
        matches!(&err, Error::Keyset(KeysetError::Invalid { field, problem }) if field == "document" && problem.contains("1048577 bytes")),
        "{err}"
    );
}
