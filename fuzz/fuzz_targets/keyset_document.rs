//! Any bytes as a keyset document (what a store hands every instance), as an
//! authenticated envelope, and as the payload inside one whose tag verifies:
//! nothing panics; a v1 document written back is read back equal and writes
//! the same bytes again; a payload that opens, sealed again, opens to the same
//! content (rewriting a keyset never drifts it).
#![no_main]

use base64::Engine;
use libfuzzer_sys::fuzz_target;
use stateseal::keyset::{KEYSET_FORMAT_V2, MacKey, MacKeyRef, open_with};
use stateseal::{Keyset, Secret, StoredKeyset};

fn v1_round_trip(data: &[u8]) {
    let Ok(doc) = Keyset::from_json(data) else { return };
    // Times are kept to the millisecond, so one write may round them; after that, a fixed point.
    let written = doc.to_json();
    let again = Keyset::from_json(&written).expect("a written document parses");
    assert_eq!(again.id, doc.id);
    assert_eq!(again.generation, doc.generation);
    assert_eq!(again.keys.len(), doc.keys.len());
    for (a, d) in again.keys.iter().zip(&doc.keys) {
        assert_eq!((&a.entry, &a.kek, &a.wrapped, a.kid, a.alg), (&d.entry, &d.kek, &d.wrapped, d.kid, d.alg));
        let (a, d) = (a.activate_at.as_secs_f64(), d.activate_at.as_secs_f64());
        assert!((a - d).abs() <= 0.0005 + d.abs() * 1e-15);
    }
    assert_eq!(again.to_json(), written, "written twice, the same bytes");
    assert_eq!(Keyset::from_json(&again.to_json()).expect("parses"), again);
}

fuzz_target!(|data: &[u8]| {
    let key = MacKey::from_secret(&Secret::new(vec![0x42; 32]).expect("secret")).expect("key");
    // The bytes as stored: the envelope never panics, and an arbitrary tag never verifies.
    if let Ok(stored) = StoredKeyset::from_bytes(data) {
        if stored.is_authenticated() {
            let _ = open_with(&stored, &key);
        }
    }
    v1_round_trip(data);
    // The bytes as a payload whose tag verifies: what the payload parser sees
    // only after the MAC, fuzzed directly.
    let tag = key.tag(KEYSET_FORMAT_V2, data);
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let Some(id) = serde_json_id(data) else { return };
    let envelope = format!(
        "{{\"format\":\"{KEYSET_FORMAT_V2}\",\"id\":{id},\"generation\":{},\"payload\":\"{}\",\"mac\":{{\"kek\":\"local:///k\",\"wrapped\":\"AA==\",\"tag\":\"{}\"}}}}",
        generation_of(data).unwrap_or(0),
        b64(data),
        b64(&tag)
    );
    let Ok(stored) = StoredKeyset::from_bytes(envelope.as_bytes()) else { return };
    let Ok(Some((doc, expires_at))) = open_with(&stored, &key) else { return };
    let r = MacKeyRef { kek: "local:///k".into(), wrapped: vec![0] };
    let Ok(resealed) = StoredKeyset::seal(&doc, expires_at, &r, &key) else { return };
    let (again, at) = open_with(&resealed, &key)
        .expect("a sealed document opens")
        .expect("under its own key");
    // Times are kept to the millisecond: one write may round them, a second changes nothing.
    let close = |a: f64, b: f64| (a - b).abs() <= 0.0005 + b.abs() * 1e-15;
    assert_eq!(again.id, doc.id);
    assert_eq!(again.generation, doc.generation);
    assert_eq!(again.keys.len(), doc.keys.len());
    for (a, d) in again.keys.iter().zip(&doc.keys) {
        assert_eq!((&a.entry, &a.kek, &a.wrapped, a.kid, a.alg), (&d.entry, &d.kek, &d.wrapped, d.kid, d.alg));
        assert!(close(a.activate_at.as_secs_f64(), d.activate_at.as_secs_f64()));
        assert!(close(a.created_at.as_secs_f64(), d.created_at.as_secs_f64()));
        assert_eq!(a.retire_at.is_some(), d.retire_at.is_some());
        assert_eq!(a.seals_reserved, d.seals_reserved);
    }
    assert!(close(at.as_secs_f64(), expires_at.as_secs_f64()));
    let twice = StoredKeyset::seal(&again, at, &r, &key).expect("a sealed document seals again");
    assert_eq!(twice.bytes(), resealed.bytes(), "sealed twice, the same bytes");
});

/// The payload's `id` as a JSON string, so that the envelope's clear copy can agree.
fn serde_json_id(data: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(data).ok()?;
    let start = text.find("\"id\":")? + 5;
    let inner = text[start..].trim_start().strip_prefix('"')?;
    let end = inner.find('"')?;
    Some(format!("\"{}\"", &inner[..end]))
}

/// The payload's `generation`, so that the envelope's clear copy can agree.
fn generation_of(data: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(data).ok()?;
    let start = text.find("\"generation\":")? + 13;
    let digits: String = text[start..].trim_start().chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}
