//! The suites' times: seconds since 1970 as `f64` (`T0 + 5.0`), handed to the
//! library as the instants it takes.

/// The instant `secs` seconds after 1970; the suites' times are finite.
pub(crate) fn instant(secs: f64) -> stateseal::UnixTime {
    stateseal::UnixTime::from_secs_f64(secs).expect("the suites' times are finite")
}
