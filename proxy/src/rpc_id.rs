//! JSON-RPC ids as the clients that wrote them compare them.
//!
//! The proxy seals a result under the identity of the request it answers,
//! found by the response's `id`. The TypeScript SDK keys its pending requests
//! by the JavaScript value of the id, so ids JavaScript reads as one number
//! (`1`, `1.0` and `1e0`; `9007199254740993` and `9007199254740992`, one
//! double apart from nothing; `0` and `-0`) are one id here too, while the
//! number `1` and the string `"1"` stay two.

use serde_json::Value;

/// A JSON-RPC id, compared as JavaScript compares the value it parses to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum RpcId {
    /// A number, as the double JavaScript reads (its bits, with -0 as 0).
    Number(u64),
    /// A string, by its content.
    String(String),
    /// `null` (a response to a request the server could not read).
    Null,
}

impl RpcId {
    /// The id `value` is, or `None` when JSON-RPC allows no such id (an
    /// object, an array, a boolean).
    #[must_use]
    pub(crate) fn of(value: &Value) -> Option<Self> {
        match value {
            Value::Number(n) => {
                // serde_json keeps big integers exact; JavaScript rounds them to a double.
                let x = n.as_f64()?;
                Some(Self::Number((x + 0.0).to_bits()))
            }
            Value::String(s) => Some(Self::String(s.clone())),
            Value::Null => Some(Self::Null),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(text: &str) -> Option<RpcId> {
        RpcId::of(&serde_json::from_str::<Value>(text).expect("JSON"))
    }

    #[test]
    fn numbers_javascript_reads_as_one_are_one_id() {
        for same in [
            ["1", "1.0"],
            ["1", "1e0"],
            ["0", "-0"],
            ["0", "-0.0"],
            ["9007199254740993", "9007199254740992"],
            ["100", "1E2"],
        ] {
            assert_eq!(id(same[0]), id(same[1]), "{same:?}");
        }
        for other in [
            ["1", "2"],
            ["1", "1.5"],
            ["9007199254740994", "9007199254740992"],
        ] {
            assert_ne!(id(other[0]), id(other[1]), "{other:?}");
        }
    }

    #[test]
    fn a_string_is_never_the_number_it_spells() {
        assert_ne!(id("1"), id("\"1\""));
        assert_ne!(id("\"1\""), id("\"1.0\""));
        assert_eq!(id("\"a\""), Some(RpcId::String("a".into())));
        assert_ne!(id("null"), id("\"null\""));
        assert_eq!(id("null"), Some(RpcId::Null));
    }

    #[test]
    fn what_no_id_can_be_is_none() {
        for bad in ["{}", "[1]", "true", "false"] {
            assert_eq!(id(bad), None, "{bad}");
        }
    }
}
