//! Values as the CLI's flags take them: seconds (`--now`, `--ttl`, intervals),
//! digits with an optional fraction and nothing else, so a typo is an error, not
//! a unit; and texts from a file or stdin, whose errors name the flag and path,
//! never the contents.

use std::io::Read;
use std::time::Duration;

use stateseal::UnixTime;

use crate::error::CliError;

/// `--now`/`--ttl`: seconds with an optional fraction.
pub(crate) fn parse_seconds(s: &str) -> Result<f64, String> {
    let ok = !s.is_empty()
        && s.chars().all(|c| c.is_ascii_digit() || c == '.')
        && s.matches('.').count() <= 1;
    match s.parse::<f64>() {
        Ok(v) if ok && v.is_finite() => Ok(v),
        _ => Err(format!(
            "expected seconds like 1782345600 or 1782345600.25, got {s:?}"
        )),
    }
}

/// A flag's duration in seconds, as [`parse_seconds`] reads it.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    let secs = parse_seconds(s)?;
    Duration::try_from_secs_f64(secs)
        .map_err(|_| format!("expected seconds that fit a duration (at most 2^64), got {s:?}"))
}

/// `--now` (or the system clock's time) as the instant the data plane takes;
/// a time that is not one is refused as `--now` refuses it.
pub(crate) fn instant(now: f64) -> Result<UnixTime, CliError> {
    UnixTime::from_secs_f64(now).ok_or_else(|| {
        CliError::Usage(format!(
            "--now {now}: must be Unix seconds between 1970 and 9999 (milliseconds are not accepted)"
        ))
    })
}

/// Reads everything on stdin (once per process).
pub(crate) fn stdin_text(what: &str) -> Result<String, CliError> {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| CliError::Usage(format!("{what}: reading stdin: {}", e.kind())))?;
    Ok(text)
}

/// The text of `path` (`-`: stdin) for `flag`; the error names the flag and
/// the path, never the contents.
pub(crate) fn file_text(flag: &str, path: &str) -> Result<String, CliError> {
    if path == "-" {
        return stdin_text(flag);
    }
    std::fs::read_to_string(path).map_err(|e| {
        CliError::Usage(format!(
            "{flag} {path}: cannot read the file as UTF-8 text ({})",
            e.kind()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::parse_seconds;

    #[test]
    fn seconds() {
        assert_eq!(parse_seconds("1782345600.25"), Ok(1782345600.25));
        assert_eq!(parse_seconds("600"), Ok(600.0));
        for bad in ["", "-1", "1e3", "1.2.3", "inf", "NaN", "10s"] {
            assert!(parse_seconds(bad).is_err(), "{bad}");
        }
    }
}
