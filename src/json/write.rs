//! Compact JSON output exactly as Python's `json.dumps(..., separators=(",", ":"))`
//! with the defaults `ensure_ascii=True` and `allow_nan=True`.

use super::decimal::push_short_repr;
use super::swar::{PLAIN, is_plain_ascii, plain_ascii_run};
use super::text::{Text, decode_at};
use super::value::Value;

/// Python's `repr(float)` for a finite float: the shortest digits that round-trip,
/// in fixed notation when the decimal exponent is in `-4 < e <= 16`, otherwise
/// `d.ddde±XX` with at least two exponent digits.
///
/// ```
/// use stateseal::json::float_repr;
/// assert_eq!(float_repr(1e16), "1e+16");
/// assert_eq!(float_repr(1e15), "1000000000000000.0");
/// assert_eq!(float_repr(1e-5), "1e-05");
/// assert_eq!(float_repr(0.0001), "0.0001");
/// ```
pub fn float_repr(f: f64) -> String {
    let mut out = Vec::with_capacity(24);
    push_float_repr(f, &mut out);
    // Only ASCII digits, signs, '.', 'e' were written.
    String::from_utf8(out).unwrap_or_default()
}

fn push_float_repr(f: f64, out: &mut Vec<u8>) {
    if !push_short_repr(f, out) {
        push_shortest_repr(f, out);
    }
}

/// `repr(f)` from the shortest round-trip digits, for any finite `f`.
pub(super) fn push_shortest_repr(f: f64, out: &mut Vec<u8>) {
    // zmij prints the shortest round-trip digits, as Python's repr does; only the
    // layout differs. (It replaced ryu: same digits, about 40% faster here.)
    let mut buf = zmij::Buffer::new();
    let shortest = buf.format_finite(f.abs());
    // Where both write fixed notation (1e-4 <= |f| < 1e16, Python's range, inside
    // zmij's), the digits and the ".0" of integers agree: copy its output as is.
    let magnitude = f.abs();
    if (1e-4..1e16).contains(&magnitude) && !shortest.bytes().any(|b| b == b'e') {
        if f.is_sign_negative() {
            out.push(b'-');
        }
        out.extend_from_slice(shortest.as_bytes());
        return;
    }
    let (mantissa, exp) = shortest.split_once('e').unwrap_or((shortest, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mut digits = [0u8; 40];
    let mut nd = 0usize;
    let mut leading = 0i32;
    for &c in int_part.as_bytes().iter().chain(frac_part.as_bytes()) {
        if nd == 0 && c == b'0' {
            leading += 1;
        } else if nd < digits.len() {
            digits[nd] = c;
            nd += 1;
        }
    }
    while nd > 0 && digits[nd - 1] == b'0' {
        nd -= 1;
    }
    if f.is_sign_negative() {
        out.push(b'-');
    }
    if nd == 0 {
        out.extend_from_slice(b"0.0");
        return;
    }
    let digits = &digits[..nd];
    let nd = nd as i32;
    let decpt = int_part.len() as i32 + exp - leading; // value = 0.DIGITS * 10^decpt
    if (-4 < decpt) && (decpt <= 16) {
        if decpt <= 0 {
            out.extend_from_slice(b"0.");
            out.extend(std::iter::repeat_n(b'0', (-decpt) as usize));
            out.extend_from_slice(digits);
        } else if decpt >= nd {
            out.extend_from_slice(digits);
            out.extend(std::iter::repeat_n(b'0', (decpt - nd) as usize));
            out.extend_from_slice(b".0");
        } else {
            out.extend_from_slice(&digits[..decpt as usize]);
            out.push(b'.');
            out.extend_from_slice(&digits[decpt as usize..]);
        }
    } else {
        out.extend_from_slice(&digits[..1]);
        if nd > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        let e = decpt - 1;
        out.push(b'e');
        out.push(if e < 0 { b'-' } else { b'+' });
        let e = e.unsigned_abs();
        if e < 10 {
            out.push(b'0');
        }
        out.extend_from_slice(itoa::Buffer::new().format(e).as_bytes());
    }
}

/// A float as `json.dumps` writes it (`NaN`, `Infinity`, `-Infinity` for the non-finite).
pub(crate) fn push_json_float(f: f64, out: &mut Vec<u8>) {
    if f.is_nan() {
        out.extend_from_slice(b"NaN");
    } else if f.is_infinite() {
        out.extend_from_slice(if f > 0.0 { "Infinity" } else { "-Infinity" }.as_bytes());
    } else {
        push_float_repr(f, out);
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn push_u_escape(cp: u32, out: &mut Vec<u8>) {
    out.extend_from_slice(b"\\u");
    for shift in [12, 8, 4, 0] {
        out.push(HEX[((cp >> shift) & 0xf) as usize]);
    }
}

/// A string as `json.dumps(..., ensure_ascii=True)` writes it, quotes included.
pub(crate) fn push_json_string(bytes: &[u8], out: &mut Vec<u8>) {
    let plain = is_plain_ascii(bytes);
    out.reserve(json_string_len(bytes, plain));
    push_classified_json_string(bytes, plain, out);
}

/// How many bytes [`push_json_string`] writes for `bytes`, quotes included;
/// `plain` is [`is_plain_ascii`]`(bytes)`, which the caller has already
/// found (a non-plain string is scanned once more here).
pub(crate) fn json_string_len(bytes: &[u8], plain: bool) -> usize {
    if plain {
        return bytes.len() + 2;
    }
    let mut n = 2;
    let mut i = 0;
    while i < bytes.len() {
        if PLAIN[usize::from(bytes[i])] {
            n += 1;
            i += 1;
            continue;
        }
        let (cp, width) = decode_at(bytes, i);
        i += width;
        n += match cp {
            0x22 | 0x5c | 0x0a | 0x0d | 0x09 | 0x08 | 0x0c => 2,
            0x10000.. => 12,
            _ => 6,
        };
    }
    n
}

/// [`push_json_string`] for a string whose plainness the caller has found;
/// writes into `out`'s spare capacity when it holds [`json_string_len`] bytes.
pub(crate) fn push_classified_json_string(bytes: &[u8], plain: bool, out: &mut Vec<u8>) {
    out.push(b'"');
    // The common case (identifiers, digests, most states) needs no escaping at all.
    if plain {
        out.extend_from_slice(bytes);
        out.push(b'"');
        return;
    }
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if PLAIN[usize::from(b)] {
            // Copy the longest run of printable ASCII at once, eight bytes at a time first.
            let start = i;
            i += plain_ascii_run(bytes, i);
            while i < bytes.len() && PLAIN[usize::from(bytes[i])] {
                i += 1;
            }
            out.extend_from_slice(&bytes[start..i]);
            continue;
        }
        let (cp, width) = decode_at(bytes, i);
        i += width;
        match cp {
            0x22 => out.extend_from_slice(b"\\\""),
            0x5c => out.extend_from_slice(b"\\\\"),
            0x0a => out.extend_from_slice(b"\\n"),
            0x0d => out.extend_from_slice(b"\\r"),
            0x09 => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            0x10000.. => {
                let v = cp - 0x10000;
                push_u_escape(0xd800 | (v >> 10), out);
                push_u_escape(0xdc00 | (v & 0x3ff), out);
            }
            _ => push_u_escape(cp, out),
        }
    }
    out.push(b'"');
}

/// Appends `text` as a JSON string literal.
pub(crate) fn push_text(text: &Text, out: &mut Vec<u8>) {
    push_json_string(text.as_bytes(), out);
}

/// Writes `v` compactly; `sort_keys` orders object members by code point.
pub(crate) fn write_compact(v: &Value, sort_keys: bool, out: &mut Vec<u8>) {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Int(s) => out.extend_from_slice(s.as_bytes()),
        Value::Float(f) => push_json_float(*f, out),
        Value::Str(t) => push_text(t, out),
        Value::Array(items) => {
            out.push(b'[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                write_compact(item, sort_keys, out);
            }
            out.push(b']');
        }
        Value::Object(members) => {
            let mut refs: Vec<&(Text, Value)> = members.iter().collect();
            if sort_keys {
                refs.sort_by(|a, b| a.0.cmp(&b.0));
            }
            out.push(b'{');
            for (n, (k, item)) in refs.into_iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                push_text(k, out);
                out.push(b':');
                write_compact(item, sort_keys, out);
            }
            out.push(b'}');
        }
    }
}

/// How a parsed value is written back: as Python's `str` or as canonical JSON.
impl Value {
    /// Python's `str(value)` for scalars; `None` for arrays and objects,
    /// whose Python `repr` stateseal deliberately does not reproduce.
    pub fn python_str(&self) -> Option<Text> {
        Some(match self {
            Self::Null => Text::from("None"),
            Self::Bool(true) => Text::from("True"),
            Self::Bool(false) => Text::from("False"),
            Self::Int(s) => Text::from(s.as_str()),
            Self::Float(f) if f.is_nan() => Text::from("nan"),
            Self::Float(f) if f.is_infinite() => Text::from(if *f > 0.0 { "inf" } else { "-inf" }),
            Self::Float(f) => Text::from(float_repr(*f)),
            Self::Str(t) => t.clone(),
            Self::Array(_) | Self::Object(_) => return None,
        })
    }

    /// `json.dumps(value, sort_keys=True, separators=(",", ":"))`, byte for byte.
    pub fn to_canonical_json(&self) -> String {
        let mut out = Vec::new();
        write_compact(self, true, &mut out);
        // ensure_ascii output is ASCII.
        String::from_utf8(out).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reprs() {
        for (f, s) in [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (0.1, "0.1"),
            (1e-7, "1e-07"),
            (1.5e-10, "1.5e-10"),
            (1e22, "1e+22"),
            (123456789.125, "123456789.125"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            (1782345600.9, "1782345600.9"),
        ] {
            assert_eq!(float_repr(f), s);
        }
    }

    #[test]
    fn escapes() {
        let mut out = Vec::new();
        push_json_string("a\"\\\n\u{7f}é😀\u{1}".as_bytes(), &mut out);
        assert_eq!(out, br#""a\"\\\n\u007f\u00e9\ud83d\ude00\u0001""#);
    }

    #[test]
    fn python_str_of_scalars() {
        let s = |v: Value| v.python_str().map(|t| t.as_str().unwrap().to_owned());
        assert_eq!(s(Value::Null).as_deref(), Some("None"));
        assert_eq!(s(Value::Float(100.0)).as_deref(), Some("100.0"));
        assert_eq!(s(Value::Float(f64::INFINITY)).as_deref(), Some("inf"));
        assert_eq!(s(Value::Int("5".into())).as_deref(), Some("5"));
        assert_eq!(s(Value::Array(vec![])), None);
    }

    #[test]
    fn from_serde_matches_parse() {
        let raw = r#"{"z":[1,-2,1.5,1e16,true,null],"a":{"é":"x"}}"#;
        let from_serde = Value::from_serde(&serde_json::from_str(raw).unwrap());
        let parsed = super::super::parse(raw.as_bytes(), super::super::Duplicates::Reject).unwrap();
        assert_eq!(from_serde.to_canonical_json(), parsed.to_canonical_json());
    }
}
