//! How commands print: one JSON object with `--json`, aligned text without;
//! times as Unix seconds beside RFC 3339 in JSON, and "in 3m 20s" in text.

use std::io::Write;

use serde_json::{Map, Value};
use stateseal::KeyId;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::error::CliError;

/// An instant as RFC 3339 (UTC, to the millisecond: the keyset document's resolution).
pub(crate) fn rfc3339(secs: f64) -> String {
    let nanos = (secs * 1e3).round() as i128 * 1_000_000;
    OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_else(|| format!("{secs} (out of range)"))
}

/// Writes one line to the command's output.
pub(crate) fn line(out: &mut dyn Write, text: impl std::fmt::Display) -> Result<(), CliError> {
    writeln!(out, "{text}").map_err(|e| CliError::Failed(format!("writing output: {e}")))
}

/// Sets `key` to Unix seconds and `key_rfc3339` to the same instant (both null when absent).
pub(crate) fn put_time(map: &mut Map<String, Value>, key: &str, t: Option<f64>) {
    map.insert(key.to_owned(), t.map_or(Value::Null, Value::from));
    map.insert(
        format!("{key}_rfc3339"),
        t.map_or(Value::Null, |t| Value::from(rfc3339(t))),
    );
}

/// A JSON object from `(key, value)` pairs, with the times given by
/// `times` added as Unix seconds and RFC 3339.
pub(crate) fn object(fields: Vec<(&str, Value)>, times: &[(&str, Option<f64>)]) -> Value {
    let mut map = Map::new();
    for (k, v) in fields {
        map.insert(k.to_owned(), v);
    }
    for (k, t) in times {
        put_time(&mut map, k, *t);
    }
    Value::Object(map)
}

/// A key id for display: its hex, or `?` when unknown.
pub(crate) fn kid_text(kid: Option<KeyId>) -> String {
    kid.map_or_else(|| "?".into(), KeyId::to_hex)
}

/// A key id for JSON: its hex, or null.
pub(crate) fn kid_json(kid: Option<KeyId>) -> Value {
    kid.map_or(Value::Null, |k| Value::from(k.to_hex()))
}

/// An instant in text: `2026-06-25T00:00:00Z (in 3m 20s)`.
pub(crate) fn when(t: f64, now: f64) -> String {
    format!("{} ({})", rfc3339(t), human(t - now))
}

/// A length of time: "0s", "1m 40s", "2h 5m", "3d 4h" (sign ignored).
pub(crate) fn span(secs: f64) -> String {
    let s = secs.abs().round() as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m {}s", s / 60, s % 60),
        3600..=86_399 => format!("{}h {}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d {}h", s / 86_400, (s % 86_400) / 3600),
    }
}

/// An offset from now: "in 1m 40s", "2h 5m ago", "now".
pub(crate) fn human(secs: f64) -> String {
    if secs.abs().round() == 0.0 {
        "now".into()
    } else if secs < 0.0 {
        format!("{} ago", span(secs))
    } else {
        format!("in {}", span(secs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(human(0.2), "now");
        assert_eq!(human(100.0), "in 1m 40s");
        assert_eq!(human(-7500.0), "2h 5m ago");
        assert_eq!(human(273_600.0), "in 3d 4h");
    }

    #[test]
    fn times_come_in_both_forms() {
        let v = object(
            vec![("a", 1.into())],
            &[("at", Some(1_782_345_600.5)), ("gone", None)],
        );
        assert_eq!(v["at"], 1_782_345_600.5);
        assert_eq!(v["at_rfc3339"], "2026-06-25T00:00:00.5Z");
        assert!(v["gone"].is_null() && v["gone_rfc3339"].is_null());
    }
}
