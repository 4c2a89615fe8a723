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

    /// xorshift64: the same values on every run.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        /// Plain runs mixed with every kind of escape.
        fn text(&mut self) -> String {
            const PIECES: [&str; 10] = [
                "plain",
                "\"",
                "\\",
                "\n",
                "\u{1}",
                "\u{1f}",
                "\u{7f}",
                "é",
                "\u{1F600}",
                "\u{2028}",
            ];
            let n = self.next() % 12;
            (0..n)
                .map(|_| {
                    let r = self.next();
                    PIECES[(r % 10) as usize].repeat(1 + (r >> 8) as usize % 20)
                })
                .collect()
        }

        /// A value of random shape, nested at most `depth` deep.
        fn value(&mut self, depth: u32) -> Value {
            let pick = self.next();
            match (pick % 7, depth) {
                (0, _) => Value::Null,
                (1, _) => json!(pick.is_multiple_of(3)),
                (2, _) => json!((pick as i64) >> 11),
                (3, _) => json!((pick >> 11) as f64 / 7.0),
                (4, _) | (_, 0) => json!(self.text()),
                (5, _) => Value::Array((0..pick % 5).map(|_| self.value(depth - 1)).collect()),
                _ => Value::Object(
                    (0..pick % 5)
                        .map(|i| (format!("{}{i}", self.text()), self.value(depth - 1)))
                        .collect(),
                ),
            }
        }
    }

    #[test]
    fn random_values_are_written_as_serde_json_writes_them() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut seen = String::new();
        for _ in 0..3000 {
            let value = rng.value(3);
            same(&value);
            seen.push_str(&value.to_string());
        }
        // The values exercise what they are for: nesting and every escape.
        for wanted in ["[{", "\\u0001", "\\\"", "\\\\", "\\n", "é", "\u{1F600}"] {
            assert!(seen.contains(wanted), "no {wanted} in the random values");
        }
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
