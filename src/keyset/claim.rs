//! A server's claim on the next rotation, written in the document before any
//! KMS call: while it lives, every other instance leaves that rotation alone,
//! so a fleet makes one rotation's KMS calls, not one per instance.

use serde::{Deserialize, Serialize};

use super::rfc3339::{format_rfc3339, is_representable, parse_rfc3339};
use crate::clock::UnixTime;
use crate::error::{Error, KeysetError};

/// Longest `holder` a claim may name.
const MAX_HOLDER_LEN: usize = 64;

/// Most earlier claimants a claim remembers (the latest ones): past this, the
/// oldest ones get their turn again before every other instance had one.
pub(crate) const MAX_TRIED: usize = 32;

/// What an instance id may be (a pod name fits).
pub const INSTANCE_ID_RULE: &str =
    "must be 1 to 64 letters, digits, '_', '-' or '.' (a pod name fits)";

/// Whether `id` may name an instance in a claim.
pub fn is_instance_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_HOLDER_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
}

/// Who is rotating the keyset away from which primary, until when.
///
/// Written with the keyset's MAC key like the rest of the document, so only
/// a KEK holder can claim; a rotation clears it. A claim whose `until` has
/// passed (its holder died mid-rotation) is ignored: another instance claims.
#[derive(Debug, Clone, PartialEq)]
pub struct RotationClaim {
    /// The claiming instance: `SchedulerConfig::instance_id`, or a random id
    /// it drew at start (`i_…`).
    pub holder: String,
    /// Entry id of the primary the claimed rotation replaces.
    pub primary: String,
    /// The instant from which the claim no longer holds.
    pub until: UnixTime,
    /// Earlier claimants of this same rotation whose claims lapsed without
    /// it (they could not make a key): each waits until every instance not
    /// in the list has had its turn, so k failing instances delay a rotation
    /// by k claims at most. Oldest first, at most 32 (the oldest drop out).
    pub tried: Vec<String>,
}

impl RotationClaim {
    /// Whether `instance` claimed this rotation already (now or before).
    pub fn has_tried(&self, instance: &str) -> bool {
        self.holder == instance || self.tried.iter().any(|t| t == instance)
    }

    /// The claimants a new claim on the same rotation remembers: these and this one's holder.
    pub fn tried_after(&self) -> Vec<String> {
        let mut tried: Vec<String> = self
            .tried
            .iter()
            .filter(|t| **t != self.holder)
            .cloned()
            .collect();
        tried.push(self.holder.clone());
        let excess = tried.len().saturating_sub(MAX_TRIED);
        tried.drain(..excess);
        tried
    }

    /// Whether the claim keeps `instance` from rotating away from `primary` at `now`.
    pub fn excludes(&self, instance: &str, primary: &str, now: UnixTime) -> bool {
        self.holder != instance && self.primary == primary && now < self.until
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawClaim {
    holder: String,
    primary: String,
    until: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tried: Vec<String>,
}

fn bad(field: &str, problem: impl Into<String>) -> Error {
    Error::Keyset(KeysetError::Invalid {
        field: format!("rotation_claim.{field}"),
        problem: problem.into(),
    })
}

impl RawClaim {
    pub(super) fn from_claim(c: &RotationClaim) -> Self {
        Self {
            holder: c.holder.clone(),
            primary: c.primary.clone(),
            until: format_rfc3339(c.until.as_secs_f64()),
            tried: c.tried.clone(),
        }
    }

    pub(super) fn into_claim(self) -> Result<RotationClaim, Error> {
        let until = parse_rfc3339(&self.until).map_err(|p| bad("until", p))?;
        let claim = RotationClaim {
            holder: self.holder,
            primary: self.primary,
            until: UnixTime::from_finite_secs(until),
            tried: self.tried,
        };
        validate(&claim)?;
        Ok(claim)
    }
}

/// The claim's own invariants (the entry it names need not exist any more).
pub(super) fn validate(c: &RotationClaim) -> Result<(), Error> {
    if !is_instance_id(&c.holder) {
        return Err(bad("holder", INSTANCE_ID_RULE));
    }
    if !(c.primary.starts_with("k_") && is_instance_id(&c.primary)) {
        return Err(bad("primary", "must be an entry id like k_<random>"));
    }
    if !is_representable(c.until) {
        return Err(bad("until", "must be between 1970 and 9999"));
    }
    if c.tried.len() > MAX_TRIED {
        return Err(bad("tried", format!("at most {MAX_TRIED} instances")));
    }
    if !c.tried.iter().all(|t| is_instance_id(t)) {
        return Err(bad("tried", INSTANCE_ID_RULE));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim() -> RotationClaim {
        RotationClaim {
            holder: "i_abc".into(),
            primary: "k_old".into(),
            until: UnixTime::from_secs(1_782_345_660),
            tried: vec!["i_first".into()],
        }
    }

    #[test]
    fn a_new_claim_remembers_every_earlier_claimant_up_to_the_cap() {
        let c = claim();
        assert!(c.has_tried("i_abc") && c.has_tried("i_first") && !c.has_tried("i_other"));
        assert_eq!(c.tried_after(), ["i_first", "i_abc"]);
        let mut long = claim();
        long.tried = (0..MAX_TRIED).map(|i| format!("i_{i}")).collect();
        let after = long.tried_after();
        assert_eq!(after.len(), MAX_TRIED);
        assert_eq!(
            after.first().map(String::as_str),
            Some("i_1"),
            "the oldest dropped"
        );
        assert_eq!(after.last().map(String::as_str), Some("i_abc"));
        // A holder claiming again is listed once.
        long.tried = vec!["i_abc".into()];
        assert_eq!(long.tried_after(), ["i_abc"]);
    }

    #[test]
    fn a_claim_excludes_others_from_its_rotation_until_it_lapses() {
        let c = claim();
        assert!(c.excludes("i_other", "k_old", UnixTime::from_secs(1_782_345_600)));
        assert!(
            !c.excludes("i_abc", "k_old", UnixTime::from_secs(1_782_345_600)),
            "its holder"
        );
        assert!(
            !c.excludes("i_other", "k_new", UnixTime::from_secs(1_782_345_600)),
            "another rotation"
        );
        assert!(
            !c.excludes("i_other", "k_old", UnixTime::from_secs(1_782_345_660)),
            "lapsed"
        );
    }

    #[test]
    fn claims_roundtrip_and_bad_ones_name_their_field() {
        let c = claim();
        assert_eq!(RawClaim::from_claim(&c).into_claim().unwrap(), c);
        for (edit, field) in [
            (
                Box::new(|c: &mut RotationClaim| c.holder = String::new())
                    as Box<dyn Fn(&mut RotationClaim)>,
                "holder",
            ),
            (
                Box::new(|c| c.holder = format!("i_{}", "a".repeat(64))),
                "holder",
            ),
            (Box::new(|c| c.holder = "i_a b".into()), "holder"),
            (Box::new(|c| c.primary = "ks_1".into()), "primary"),
            (
                Box::new(|c| c.until = UnixTime::from_secs(1000000000000000)),
                "until",
            ),
            (Box::new(|c| c.tried = vec!["a b".into()]), "tried"),
            (
                Box::new(|c| c.tried = vec!["i_x".into(); MAX_TRIED + 1]),
                "tried",
            ),
        ] {
            let mut bad_claim = claim();
            edit(&mut bad_claim);
            let err = validate(&bad_claim).unwrap_err().to_string();
            assert!(err.contains(&format!("rotation_claim.{field}")), "{err}");
        }
    }
}
