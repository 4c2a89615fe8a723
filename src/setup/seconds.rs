//! The configuration's durations as its file and `STATESEAL_*` variables
//! write them: seconds, whole or with a fraction. Each field's reader refuses
//! what is no duration with the words the field's check has always used; a
//! count of seconds too large for a `Duration` is the longest one (the
//! timing's own check then names its limit).

use std::time::Duration;

use serde::de::{Deserialize, Deserializer, Error as _};

use crate::keyset::timing::{MAX_SKEW_RULE, REFRESH_INTERVAL_RULE};

/// What a field admits.
#[derive(Clone, Copy)]
enum Rule {
    /// More than zero.
    Positive,
    /// Zero or more.
    NonNegative,
}

/// `secs` as a duration under `rule`, or `message`.
fn read(secs: f64, rule: Rule, message: impl FnOnce() -> String) -> Result<Duration, String> {
    let admitted = match rule {
        Rule::Positive => secs > 0.0,
        Rule::NonNegative => secs >= 0.0,
    };
    if !(admitted && secs.is_finite()) {
        return Err(message());
    }
    Ok(Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX))
}

/// One reader per field: `name(rule, message)`.
macro_rules! readers {
    ($($(#[$doc:meta])* $name:ident($rule:expr, $message:expr);)*) => {
        $(
            $(#[$doc])*
            pub(super) fn $name<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
                read(f64::deserialize(d)?, $rule, || $message.to_string())
                    .map_err(D::Error::custom)
            }
        )*
    };
}

readers! {
    /// T.
    ttl(Rule::Positive, "field `ttl`: must be a positive number of seconds");
    /// R.
    refresh_interval(Rule::NonNegative, format!("field {REFRESH_INTERVAL_RULE}"));
    /// S.
    max_skew(Rule::NonNegative, format!("field {MAX_SKEW_RULE}"));
    /// How long a cached unwrap serves.
    max_key_age(Rule::Positive, "field max_key_age must be a positive number of seconds");
    /// How long past `max_key_age` through a KMS outage.
    outage_grace(
        Rule::NonNegative,
        "field outage_grace must be zero or a positive number of seconds"
    );
    /// How long start-up waits.
    ready_timeout(Rule::Positive, "field `ready_timeout`: must be a positive number of seconds");
}

/// P, when given.
pub(super) fn propagation<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    let secs = f64::deserialize(d)?;
    read(
        secs,
        Rule::NonNegative,
        || {
            format!(
                "field propagation ({secs}) must be at least 1.1 x refresh_interval + max_skew so every instance knows a key before it seals"
            )
        },
    )
    .map(Some)
    .map_err(D::Error::custom)
}

/// The store staleness bound, when given.
pub(super) fn max_store_staleness<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Duration>, D::Error> {
    read(f64::deserialize(d)?, Rule::Positive, || {
        "field max_store_staleness must be a positive number of seconds".into()
    })
    .map(Some)
    .map_err(D::Error::custom)
}

/// The rotation period: zero is never.
pub(super) fn rotation_period<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Duration>, D::Error> {
    let period = read(f64::deserialize(d)?, Rule::NonNegative, || {
        "field `rotation_period`: must be zero (never) or a positive number of seconds".into()
    })
    .map_err(D::Error::custom)?;
    Ok((!period.is_zero()).then_some(period))
}
