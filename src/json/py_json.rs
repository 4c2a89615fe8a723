//! `PyJson`: the few Python operations the request identity needs, over both
//! stateseal's own [`Value`] and `serde_json::Value` (what rmcp hands a server),
//! so the rmcp path digests without converting the arguments first.

use super::text::Text;
use super::value::Value;
use super::write::{float_repr, push_json_float, push_json_string, write_compact};

/// Python semantics over a JSON value type.
pub(crate) trait PyJson {
    /// Object member `key` (`None` for a missing key or a non-object).
    fn member(&self, key: &str) -> Option<&Self>;
    /// `Some(true)` for an object, `Some(false)` for null, `None` otherwise.
    fn object_or_null(&self) -> Option<bool>;
    /// Python `bool(value)`.
    fn truthy(&self) -> bool;
    /// Python `str(value)` for scalars.
    fn py_str(&self) -> Option<Text>;
    /// `json.dumps(value, sort_keys=True, separators=(",", ":"))`.
    fn write_sorted(&self, out: &mut Vec<u8>);
}

impl PyJson for Value {
    fn member(&self, key: &str) -> Option<&Self> {
        self.get(key)
    }
    fn object_or_null(&self) -> Option<bool> {
        match self {
            Self::Object(_) => Some(true),
            Self::Null => Some(false),
            _ => None,
        }
    }
    fn truthy(&self) -> bool {
        self.is_truthy()
    }
    fn py_str(&self) -> Option<Text> {
        self.python_str()
    }
    fn write_sorted(&self, out: &mut Vec<u8>) {
        write_compact(self, true, out);
    }
}

impl PyJson for serde_json::Value {
    fn member(&self, key: &str) -> Option<&Self> {
        self.as_object().and_then(|m| m.get(key))
    }
    fn object_or_null(&self) -> Option<bool> {
        match self {
            Self::Object(_) => Some(true),
            Self::Null => Some(false),
            _ => None,
        }
    }
    fn truthy(&self) -> bool {
        match self {
            Self::Null => false,
            Self::Bool(b) => *b,
            Self::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
            Self::String(s) => !s.is_empty(),
            Self::Array(a) => !a.is_empty(),
            Self::Object(m) => !m.is_empty(),
        }
    }
    fn py_str(&self) -> Option<Text> {
        match self {
            Self::String(s) => Some(Text::from(s.as_str())),
            Self::Number(n) if n.is_f64() => n.as_f64().map(|f| Text::from(float_repr(f))),
            Self::Array(_) | Self::Object(_) => None,
            other => Value::from_serde(other).python_str(),
        }
    }
    fn write_sorted(&self, out: &mut Vec<u8>) {
        match self {
            Self::Null => out.extend_from_slice(b"null"),
            Self::Bool(b) => out.extend_from_slice(if *b { "true" } else { "false" }.as_bytes()),
            Self::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), _, _) => out.extend_from_slice(itoa::Buffer::new().format(i).as_bytes()),
                (_, Some(u), _) => out.extend_from_slice(itoa::Buffer::new().format(u).as_bytes()),
                (_, _, Some(f)) => push_json_float(f, out),
                _ => out.extend_from_slice(b"NaN"),
            },
            Self::String(s) => push_json_string(s.as_bytes(), out),
            Self::Array(items) => {
                out.push(b'[');
                for (n, item) in items.iter().enumerate() {
                    if n > 0 {
                        out.push(b',');
                    }
                    item.write_sorted(out);
                }
                out.push(b']');
            }
            Self::Object(map) => write_sorted_map(map, out),
        }
    }
}

/// `json.dumps(map, sort_keys=True, separators=(",", ":"))` of a `serde_json` object.
pub(crate) fn write_sorted_map(
    map: &serde_json::Map<String, serde_json::Value>,
    out: &mut Vec<u8>,
) {
    write_sorted_members(map.iter(), out);
}

/// The object of `members` with its keys in code-point order. serde_json's map
/// iterates sorted unless a crate enabled `preserve_order`: the members are
/// written in their order, and only if a key turns out of order does it start
/// over sorted.
fn write_sorted_members<'m>(
    members: impl Iterator<Item = (&'m String, &'m serde_json::Value)> + Clone,
    out: &mut Vec<u8>,
) {
    let write_member = |n: usize, k: &String, item: &serde_json::Value, out: &mut Vec<u8>| {
        if n > 0 {
            out.push(b',');
        }
        push_json_string(k.as_bytes(), out);
        out.push(b':');
        item.write_sorted(out);
    };
    out.push(b'{');
    let start = out.len();
    let mut previous: Option<&[u8]> = None;
    let mut sorted = true;
    for (n, (k, item)) in members.clone().enumerate() {
        if previous.is_some_and(|p| p >= k.as_bytes()) {
            sorted = false;
            break;
        }
        previous = Some(k.as_bytes());
        write_member(n, k, item, out);
    }
    if !sorted {
        out.truncate(start);
        let mut members: Vec<_> = members.collect();
        members.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        for (n, (k, item)) in members.into_iter().enumerate() {
            write_member(n, k, item, out);
        }
    }
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Members in insertion order (as with serde_json's `preserve_order`) are written sorted.
    #[test]
    fn unsorted_members_are_written_sorted() {
        let (z, a, mid) = (String::from("z"), String::from("a"), String::from("\u{e9}"));
        let (one, two, three) = (
            serde_json::json!(1),
            serde_json::json!([true]),
            serde_json::json!({"y": 0.5, "b": null}),
        );
        for order in [
            vec![(&z, &one), (&a, &two), (&mid, &three)],
            vec![(&a, &two), (&z, &one), (&mid, &three)],
            vec![(&a, &two), (&z, &one)],
        ] {
            let mut out = b"prefix".to_vec();
            write_sorted_members(order.iter().copied(), &mut out);
            let want: &[u8] = if order.len() == 3 {
                br#"prefix{"a":[true],"z":1,"\u00e9":{"b":null,"y":0.5}}"#
            } else {
                br#"prefix{"a":[true],"z":1}"#
            };
            assert_eq!(out, want, "{:?}", String::from_utf8_lossy(&out));
        }
    }

    #[test]
    fn serde_and_own_value_agree() {
        let raw = r#"{"z":[1,-2,1.5,1e16,true,null,"é\u0001"],"a":{"b":0.0,"a":-0.0},"n":18446744073709551615,"":""}"#;
        let serde: serde_json::Value = serde_json::from_str(raw).unwrap();
        let own = super::super::parse(raw.as_bytes(), super::super::Duplicates::Reject).unwrap();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        serde.write_sorted(&mut a);
        own.write_sorted(&mut b);
        assert_eq!(a, b);
        for key in ["z", "a", "n", ""] {
            let (s, o) = (serde.member(key).unwrap(), own.member(key).unwrap());
            assert_eq!(s.truthy(), o.truthy(), "{key}");
            assert_eq!(s.py_str(), o.py_str(), "{key}");
        }
        assert_eq!(serde_json::json!(5).py_str(), Some(Text::from("5")));
        assert_eq!(serde_json::json!(1e2).py_str(), Some(Text::from("100.0")));
        assert!(!serde_json::json!(0.0).truthy());
    }
}
