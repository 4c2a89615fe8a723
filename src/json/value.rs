//! `Value`: a JSON document as Python's `json.loads` returns it.

use super::text::Text;

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
    fn truthiness() {
        assert!(!Value::Float(-0.0).is_truthy());
        assert!(Value::Float(f64::NAN).is_truthy());
        assert!(!Value::Str(Text::default()).is_truthy());
        assert!(Value::Int("-1".into()).is_truthy());
    }
}
