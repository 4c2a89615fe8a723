//! JSON text as `serde_json` writes it, byte for byte, with long strings
//! copied in runs. A state or its token is kilobytes of text with nothing
//! to escape; `serde_json` looks each of those bytes up in a table, which
//! made writing a 16 KiB round's bodies the largest part of the proxy's
//! work. Here the writer finds the next byte that needs an escape sixteen
//! bytes at a time and copies everything before it.

use serde_json::Value;

/// `value` as JSON text, exactly as `serde_json::to_vec` writes it.
/// `hint` is the expected length (the text it was read from), so the
/// buffer is allocated once.
pub(crate) fn to_vec(value: &Value, hint: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(hint + hint / 2 + 64);
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        // Numbers are short; serde_json's own formatting keeps them identical.
        Value::Number(n) => {
            let _ = serde_json::to_writer(&mut *out, n);
        }
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, item);
            }
            out.push(b']');
        }
        Value::Object(members) => {
            out.push(b'{');
            for (i, (name, item)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, name);
                out.push(b':');
                write_value(out, item);
            }
            out.push(b'}');
        }
    }
}

/// A JSON string: runs without an escape copied whole, each escape
/// spelled as `serde_json` spells it.
fn write_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    while start < bytes.len() {
        let run = plain_run(&bytes[start..]);
        out.extend_from_slice(&bytes[start..start + run]);
        start += run;
        if let Some(&b) = bytes.get(start) {
            escape(out, b);
            start += 1;
        }
    }
    out.push(b'"');
}

/// Whether `serde_json` escapes byte `b`: controls, `"` and `\`.
fn special(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// How many bytes from the start need no escape.
fn plain_run(bytes: &[u8]) -> usize {
    const BLOCK: usize = 16;
    let mut i = 0;
    // No early exit inside a block: the compiler turns it into vector compares.
    while i + BLOCK <= bytes.len() {
        let block = &bytes[i..i + BLOCK];
        if block.iter().fold(false, |any, &b| any | special(b)) {
            break;
        }
        i += BLOCK;
    }
    i + bytes[i..]
        .iter()
        .position(|&b| special(b))
        .unwrap_or(bytes.len() - i)
}

fn escape(out: &mut Vec<u8>, b: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match b {
        b'"' => out.extend_from_slice(b"\\\""),
        b'\\' => out.extend_from_slice(b"\\\\"),
        b'\n' => out.extend_from_slice(b"\\n"),
        b'\r' => out.extend_from_slice(b"\\r"),
        b'\t' => out.extend_from_slice(b"\\t"),
        0x08 => out.extend_from_slice(b"\\b"),
        0x0c => out.extend_from_slice(b"\\f"),
        _ => out.extend_from_slice(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX[usize::from(b >> 4)],
            HEX[usize::from(b & 0xf)],
        ]),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn same(value: &Value) {
        let ours = to_vec(value, 0);
        let theirs = serde_json::to_vec(value).expect("serde_json writes it");
        assert_eq!(
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&theirs)
        );
    }

    #[test]
    fn every_byte_a_string_can_hold_is_written_as_serde_json_writes_it() {
        let all: String = (0u32..0x800).filter_map(char::from_u32).collect();
        same(&json!(all));
        for c in (0u8..0x80).map(char::from) {
            // Each special at every offset of a block, and at either end.
            for at in [0, 1, 15, 16, 17, 31, 40] {
                let mut s = "x".repeat(40);
                s.insert(at, c);
                same(&json!(s));
                same(&json!({ s.clone(): [s] }));
            }
        }
        same(&json!("\u{2028}\u{2029}\u{1F600}\u{FEFF} é"));
    }

    #[test]
    fn every_kind_of_value_is_written_as_serde_json_writes_it() {
        same(&json!({
            "jsonrpc": "2.0", "id": -7, "n": [0, 1.5, -0.0, 1e300, 18446744073709551615u64, i64::MIN],
            "t": true, "f": false, "z": null, "o": {}, "a": [], "nested": [{"k": [[{}]]}],
            "requestState": "s".repeat(16384),
            "json in a string": "{\"a\":[1,\"b\\\\\"],\n\t\"c\":null}".repeat(100),
        }));
    }
}
