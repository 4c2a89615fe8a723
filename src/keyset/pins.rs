//! Pins: which keyset and which KEKs an instance trusts, fixed by its own
//! configuration and checked before any KMS call.
//!
//! A document names its own KEKs. Without pins, a store writer could name a
//! KMS key in their own account (granting the fleet decrypt on it) and the
//! fleet would unwrap, and seal under, a key the writer knows.

use crate::error::Error;

/// The keyset id and the KEKs a keyset may use.
///
/// A KEK pin is a full KEK URI (matched exactly) or a prefix ending in `/`,
/// which matches whole path segments: `gcp-kms://projects/p1/` matches
/// `gcp-kms://projects/p1/locations/…` and never `gcp-kms://projects/p10/…`.
/// A KEK matched by a prefix must not contain `.`/`..` segments, empty
/// segments, `%`, `?`, `#`, `\`, white space or control characters, so no
/// spelling can leave the pinned path once a client normalises it. An alias
/// ARN (`aws-kms://arn:aws:kms:…:alias/name`) pins the alias, not the key an
/// administrator points it at.
///
/// ```
/// use stateseal::keyset::KeysetPins;
/// let pins = KeysetPins::new("ks_0123", ["gcp-kms://projects/p1/"])?;
/// assert!(pins.allows_kek("gcp-kms://projects/p1/locations/eu/keyRings/r/cryptoKeys/k"));
/// assert!(!pins.allows_kek("gcp-kms://projects/p10/locations/eu/keyRings/r/cryptoKeys/k"));
/// assert!(!pins.allows_kek("gcp-kms://projects/p1/../p2/locations/eu/keyRings/r/cryptoKeys/k"));
/// assert!(KeysetPins::new("ks_0123", ["gcp-kms://projects/p1"])?.allows_kek("gcp-kms://projects/p1"));
/// # Ok::<(), stateseal::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeysetPins {
    keyset_id: String,
    keks: Vec<String>,
}

impl KeysetPins {
    /// Pins keyset `keyset_id` to the KEKs `keks` (full URIs or `/`-terminated prefixes).
    ///
    /// # Errors
    /// [`Error::Config`] for a keyset id that is not `ks_…`, no KEK pin, or a
    /// pin that is not `<scheme>://<something>`.
    pub fn new<I, S>(keyset_id: &str, keks: I) -> Result<Self, Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        if !keyset_id.starts_with("ks_") || keyset_id.len() < 4 {
            return Err(Error::Config(format!(
                "keyset_id {keyset_id:?} is not a keyset id (ks_…); copy it from `stateseal status`"
            )));
        }
        let keks: Vec<String> = keks.into_iter().map(Into::into).collect();
        if keks.is_empty() {
            return Err(Error::Config(
                "keyset_keks is empty: pin at least one KEK URI (or a prefix ending in /)".into(),
            ));
        }
        for k in &keks {
            let ok = k
                .split_once("://")
                .is_some_and(|(s, rest)| !s.is_empty() && !rest.is_empty());
            if !ok || !plain(k) {
                return Err(Error::Config(format!(
                    "keyset_keks entry {k:?} is not a KEK URI or prefix (scheme://…, no white space, %, ?, # or dot segments)"
                )));
            }
        }
        Ok(Self {
            keyset_id: keyset_id.to_owned(),
            keks,
        })
    }

    /// The pins a configuration names: both the keyset id and its KEKs, or
    /// neither (`Ok(None)`, which only a `file://` store accepts).
    ///
    /// ```
    /// use stateseal::keyset::KeysetPins;
    /// let keks = vec!["gcp-kms://projects/p1/".to_owned()];
    /// assert!(KeysetPins::from_parts(Some("ks_a"), &keks)?.is_some());
    /// assert!(KeysetPins::from_parts(None, &[])?.is_none());
    /// assert!(KeysetPins::from_parts(None, &keks).is_err());
    /// # Ok::<(), stateseal::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Config`] when only one is given, or as [`KeysetPins::new`].
    pub fn from_parts(keyset_id: Option<&str>, keks: &[String]) -> Result<Option<Self>, Error> {
        match (keyset_id, keks.is_empty()) {
            (None, true) => Ok(None),
            (Some(id), false) => Self::new(id, keks).map(Some),
            (None, false) => Err(Error::Config(
                "keyset_id is required with keyset_keks: the keyset's id, as `stateseal init` printed it".into(),
            )),
            (Some(_), true) => Err(Error::Config(
                "keyset_keks is required with keyset_id: the KEKs the keyset may use, as `stateseal init` printed them".into(),
            )),
        }
    }

    /// The pinned keyset id.
    pub fn keyset_id(&self) -> &str {
        &self.keyset_id
    }

    /// The KEK pins, as configured.
    pub fn keks(&self) -> &[String] {
        &self.keks
    }

    /// Whether `kek` is one of the pinned KEKs, or lies under a pinned prefix.
    pub fn allows_kek(&self, kek: &str) -> bool {
        self.keks.iter().any(|pin| {
            if pin.ends_with('/') {
                kek.len() > pin.len() && kek.starts_with(pin.as_str()) && plain(kek)
            } else {
                kek == pin
            }
        })
    }
}

/// Whether `uri`'s path can only mean what it says: no segment a client would
/// normalise away, nothing it would decode.
fn plain(uri: &str) -> bool {
    let Some((_, rest)) = uri.split_once("://") else {
        return false;
    };
    !uri.chars()
        .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '%' | '?' | '#' | '\\'))
        && !rest.split('/').any(|s| s == "." || s == "..")
        && !rest.trim_end_matches('/').contains("//")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_match_whole_segments_and_exact_pins_match_exactly() {
        let pins = KeysetPins::new(
            "ks_a",
            [
                "gcp-kms://projects/p1/",
                "aws-kms://arn:aws:kms:eu-west-1:111122223333:alias/fleet",
            ],
        )
        .unwrap();
        for ok in [
            "gcp-kms://projects/p1/locations/eu/keyRings/r/cryptoKeys/k",
            "aws-kms://arn:aws:kms:eu-west-1:111122223333:alias/fleet",
        ] {
            assert!(pins.allows_kek(ok), "{ok}");
        }
        for refused in [
            "gcp-kms://projects/p10/locations/eu/keyRings/r/cryptoKeys/k",
            "gcp-kms://projects/p1",
            "gcp-kms://projects/p1/",
            "gcp-kms://projects/p1/../p2/keyRings/r/cryptoKeys/k",
            "gcp-kms://projects/p1/./x",
            "gcp-kms://projects/p1//x",
            "gcp-kms://projects/p1/%2e%2e/p2/x",
            "gcp-kms://projects/p1/x?y",
            "gcp-kms://projects/p1/x#y",
            "gcp-kms://projects/p1/x y",
            "aws-kms://arn:aws:kms:eu-west-1:111122223333:alias/fleet2",
            "aws-kms://arn:aws:kms:eu-west-1:111122223333:alias/flee",
            "aws-kms://arn:aws:kms:eu-west-1:444455556666:alias/fleet",
            "local:///tmp/kek",
        ] {
            assert!(!pins.allows_kek(refused), "{refused}");
        }
    }

    #[test]
    fn bad_pins_are_configuration_errors() {
        for (id, keks, says) in [
            ("abc", vec!["local:///k"], "keyset id"),
            ("ks_", vec!["local:///k"], "keyset id"),
            ("ks_a", vec![], "empty"),
            ("ks_a", vec!["projects/p1/"], "not a KEK URI"),
            ("ks_a", vec!["gcp-kms://projects/../"], "not a KEK URI"),
            ("ks_a", vec!["gcp-kms://projects/p%31/"], "not a KEK URI"),
        ] {
            let err = KeysetPins::new(id, keks).unwrap_err();
            assert!(
                matches!(&err, Error::Config(m) if m.contains(says)),
                "{id} {err}"
            );
        }
    }
}
