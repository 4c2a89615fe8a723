//! `Value`: a JSON document as Python's `json.loads` returns it.

use super::text::Text;
use super::write::{float_repr, write_compact};

/// A parsed JSON value with Python's data model: integers stay exact (as
/// canonical decimal text), floats are `f64` (NaN and infinities included),
/// strings are [`Text`], objects keep insertion order.
///
/// ```
/// use stateseal::json::{Duplicates, Value, parse};
/// let v = parse(br#"{"b":1,"a":[1.0,1e16]}"#, Duplicates::LastWins)?;
/// assert_eq!(v.to_canonical_json(), r#"{"a":[1.0,1e+16],"b":1}"#);
/// # Ok::<(), stateseal::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `null` (`None`).
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer of any size, as canonical decimal text (`-?[0-9]+`, no `-0`).
    Int(String),
    /// A float (`NaN` and `±Infinity` allowed, as in Python).
    Float(f64),
    /// A string.
    Str(Text),
    /// An array.
    Array(Vec<Value>),
    /// An object: members in insertion order, keys unique.
    Object(Vec<(Text, Value)>),
}

impl Value {
    /// Member `key` of an object (`None` for a missing key or a non-object).
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Self::Object(m) => m
                .iter()
                .find(|(k, _)| k.as_bytes() == key.as_bytes())
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// Python truthiness (`bool(value)`): empty containers, `""`, `0`, `0.0`, `None` and `False` are false.
    pub fn is_truthy(&self) -> bool {
        match self {
            Self::Null => false,
            Self::Bool(b) => *b,
            Self::Int(s) => s != "0",
            Self::Float(f) => *f != 0.0,
            Self::Str(t) => !t.is_empty(),
            Self::Array(a) => !a.is_empty(),
            Self::Object(m) => !m.is_empty(),
        }
    }

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

    /// Converts a `serde_json` value (what rmcp hands a server).
    ///
    /// `serde_json` has already turned integers beyond the 64-bit range into
    /// floats, so those digest differently than in Python (listed in the README).
    pub fn from_serde(v: &serde_json::Value) -> Self {
        match v {
            serde_json::Value::Null => Self::Null,
            serde_json::Value::Bool(b) => Self::Bool(*b),
            serde_json::Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Self::Int(i.to_string())
                } else if let Some(u) = n.as_u64() {
                    Self::Int(u.to_string())
                } else {
                    Self::Float(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            serde_json::Value::String(s) => Self::Str(Text::from(s.as_str())),
            serde_json::Value::Array(a) => Self::Array(a.iter().map(Self::from_serde).collect()),
            serde_json::Value::Object(m) => Self::Object(
                m.iter()
                    .map(|(k, v)| (Text::from(k.as_str()), Self::from_serde(v)))
                    .collect(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn truthiness() {
        assert!(!Value::Float(-0.0).is_truthy());
        assert!(Value::Float(f64::NAN).is_truthy());
        assert!(!Value::Str(Text::default()).is_truthy());
        assert!(Value::Int("-1".into()).is_truthy());
    }

    #[test]
    fn from_serde_matches_parse() {
        let raw = r#"{"z":[1,-2,1.5,1e16,true,null],"a":{"é":"x"}}"#;
        let from_serde = Value::from_serde(&serde_json::from_str(raw).unwrap());
        let parsed = super::super::parse(raw.as_bytes(), super::super::Duplicates::Reject).unwrap();
        assert_eq!(from_serde.to_canonical_json(), parsed.to_canonical_json());
    }
}
