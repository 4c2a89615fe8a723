//! Any bytes as a keyset document (what a store hands every instance): parsing
//! never panics, and an accepted document written back is read back equal and
//! writes the same bytes again (rewriting a keyset never drifts it).
#![no_main]

use libfuzzer_sys::fuzz_target;
use stateseal::Keyset;

fuzz_target!(|data: &[u8]| {
    let Ok(doc) = Keyset::from_json(data) else { return };
    // Times are kept to the millisecond, so one write may round them; after that, a fixed point.
    let written = doc.to_json();
    let again = Keyset::from_json(&written).expect("a written document parses");
    assert_eq!(again.id, doc.id);
    assert_eq!(again.generation, doc.generation);
    assert_eq!(again.keys.len(), doc.keys.len());
    for (a, d) in again.keys.iter().zip(&doc.keys) {
        assert_eq!((&a.entry, &a.kek, &a.wrapped, a.kid), (&d.entry, &d.kek, &d.wrapped, d.kid));
        assert!((a.activate_at - d.activate_at).abs() <= 0.0005 + d.activate_at.abs() * 1e-15);
    }
    assert_eq!(again.to_json(), written, "written twice, the same bytes");
    assert_eq!(Keyset::from_json(&again.to_json()).expect("parses"), again);
});
