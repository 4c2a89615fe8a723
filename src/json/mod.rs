//! JSON with Python's semantics, for everything the state path digests or seals.
//!
//! The Python SDK digests request arguments with `json.dumps(sort_keys=True,
//! separators=(",", ":"))` and seals claims with the same compact encoder. A
//! Rust server must reproduce those bytes exactly for mixed fleets to work,
//! including Python's float `repr`, exact big integers, `\uXXXX` escapes of
//! everything outside printable ASCII, and lone surrogates.
//!
//! Private to the crate; the `internals` feature exposes it to the project's
//! own tests, benchmarks and fuzzers.
#![cfg_attr(
    not(feature = "internals"),
    allow(unreachable_pub, unused_imports, dead_code)
)]

mod cursor;
mod decimal;
mod parse;
mod py_json;
mod swar;
mod text;
mod value;
mod write;

pub use parse::{Duplicates, MAX_DEPTH, MAX_INT_DIGITS, parse};
pub use text::Text;
pub use value::Value;
pub use write::float_repr;

pub(crate) use cursor::Cursor;
pub(crate) use parse::{Scalar, parse_flat_object_with};
pub(crate) use py_json::{PyJson, write_sorted_map};
pub(crate) use swar::is_plain_ascii;
pub(crate) use write::{
    json_string_len, push_classified_json_string, push_json_float, push_json_string as push_wtf8,
};
