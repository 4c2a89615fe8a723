//! The document's time format: RFC 3339 in UTC, to the millisecond, from the
//! Unix epoch to the year 9999. Every dated field (key timelines, claims,
//! revocations, expiry) is written and read here.

use time::OffsetDateTime;

use crate::clock::UnixTime;
use time::format_description::well_known::Rfc3339;

/// Unix seconds → RFC 3339 (UTC, to the nearest millisecond).
#[cfg_attr(not(feature = "internals"), allow(unreachable_pub))]
pub fn format_rfc3339(secs: f64) -> String {
    // The nearest millisecond, as `document_time` rounds.
    let nanos = (secs * 1e3).round() as i128 * 1_000_000;
    OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_else(|| "invalid-time".to_owned())
}

/// `secs` at the document's resolution: the nearest whole millisecond, as
/// [`format_rfc3339`] writes it.
pub(crate) fn document_time(secs: f64) -> f64 {
    (secs * 1000.0).round() / 1000.0
}

/// The latest time a document may hold: 9999-12-31T23:59:59Z (RFC 3339 has four-digit years).
pub const MAX_TIME: UnixTime = UnixTime::from_secs(253_402_300_799);

/// Whether `t` is a time a document can hold: from the Unix epoch to [`MAX_TIME`].
pub fn is_representable(t: UnixTime) -> bool {
    (UnixTime::EPOCH..=MAX_TIME).contains(&t)
}

/// Whether `secs` is a time a document can hold (finite, from the epoch to [`MAX_TIME`]).
pub(crate) fn is_representable_secs(secs: f64) -> bool {
    UnixTime::from_secs_f64(secs).is_some_and(is_representable)
}

/// RFC 3339 → Unix seconds.
///
/// # Errors
/// A message describing the parse failure.
#[cfg_attr(not(feature = "internals"), allow(unreachable_pub))]
pub fn parse_rfc3339(text: &str) -> Result<f64, String> {
    let t = OffsetDateTime::parse(text, &Rfc3339)
        .map_err(|e| format!("not an RFC 3339 timestamp ({e})"))?;
    // Whole seconds plus the fraction: the nearest double to what was written.
    Ok(t.unix_timestamp() as f64 + f64::from(t.nanosecond()) / 1e9)
}
