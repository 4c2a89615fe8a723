//! The Python-semantics JSON parser and canonical writer: no panics, and
//! canonical output is a fixed point (parse(canonical(v)) writes the same bytes).
#![no_main]

use libfuzzer_sys::fuzz_target;
use stateseal::json::{Duplicates, parse};

fuzz_target!(|data: &[u8]| {
    if let Ok(v) = parse(data, Duplicates::LastWins) {
        let once = v.to_canonical_json();
        let again = parse(once.as_bytes(), Duplicates::Reject).expect("canonical output parses").to_canonical_json();
        assert_eq!(once, again);
        assert!(once.is_ascii());
    }
});
