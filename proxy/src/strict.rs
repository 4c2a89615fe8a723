//! JSON as the proxy reads it: an object that names a member twice is
//! refused. Parsers disagree about such a document (Python, JavaScript and
//! `serde_json` keep the last copy, others the first, some refuse it), so a
//! proxy that verified one copy of a `requestState`, a method or an
//! argument and forwarded both would let the server or the client read the
//! other. Refused, nothing the proxy forwards can be read two ways.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Why a document was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unreadable {
    /// Not JSON (or not UTF-8, or nested past `serde_json`'s depth limit).
    NotJson,
    /// JSON whose objects name a member twice.
    Duplicate,
}

/// Parses `bytes` as one JSON document, refusing duplicate member names.
pub(crate) fn from_slice(bytes: &[u8]) -> Result<Value, Unreadable> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = Strict.deserialize(&mut de).map_err(classify)?;
    de.end().map_err(classify)?;
    Ok(value)
}

const DUPLICATE: &str = "an object names a member twice";

fn classify(e: serde_json::Error) -> Unreadable {
    if e.is_data() && e.to_string().starts_with(DUPLICATE) {
        Unreadable::Duplicate
    } else {
        Unreadable::NotJson
    }
}

/// A `serde_json::Value`, built as `serde_json` builds one, but refusing a
/// second member of one name.
struct Strict;

impl<'de> DeserializeSeed<'de> for Strict {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element_seed(Strict)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some(name) = map.next_key::<String>()? {
            if members.contains_key(&name) {
                return Err(de::Error::custom(DUPLICATE));
            }
            let value = map.next_value_seed(Strict)?;
            members.insert(name, value);
        }
        Ok(Value::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_named_twice_is_refused_at_any_depth_even_spelled_with_an_escape() {
        for doc in [
            r#"{"a":1,"a":1}"#,
            r#"{"x":[{"requestState":"s","requestState":null}]}"#,
            r#"{"requestState":"s","request\u0053tate":null}"#,
        ] {
            assert_eq!(
                from_slice(doc.as_bytes()),
                Err(Unreadable::Duplicate),
                "{doc}"
            );
        }
    }

    #[test]
    fn what_is_not_json_is_told_apart_and_the_rest_reads_as_serde_json_reads_it() {
        for doc in [
            &b"{"[..],
            b"{} x",
            b"NaN",
            b"{\"a\":\"\xff\"}",
            b"\"\\ud800\"",
        ] {
            assert_eq!(from_slice(doc), Err(Unreadable::NotJson));
        }
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert_eq!(
            from_slice(deep.as_bytes()),
            Err(Unreadable::NotJson),
            "the depth limit"
        );
        let doc = r#"{"n":[1,-2,1.5,1e400,18446744073709551615,null,true],"s":"\u00e9\n","o":{}}"#;
        let ours = from_slice(doc.as_bytes());
        let theirs: Result<Value, _> = serde_json::from_slice(doc.as_bytes());
        match theirs {
            Ok(v) => assert_eq!(ours, Ok(v)),
            Err(_) => assert_eq!(ours, Err(Unreadable::NotJson)),
        }
        let doc = r#"{"n":[1,-2,1.5,18446744073709551615,null,true],"s":"\u00e9\n","o":{"a":{}}}"#;
        assert_eq!(
            from_slice(doc.as_bytes()),
            Ok(serde_json::from_slice(doc.as_bytes()).expect("JSON"))
        );
    }
}
