//! Revocation entries in the keyset document: their stored form, how long
//! each must stay, the cap, and the admission rule that keeps a store writer
//! (or a restored backup) from dropping one early.
//!
//! ```json
//! "revocations": [
//!   { "kind": "principal", "principal_sha256": "<64 hex>", "before": "RFC 3339" },
//!   { "kind": "client_id", "client_id": "app-1", "before": "RFC 3339" },
//!   { "kind": "all", "before": "RFC 3339" } ]
//! ```
//!
//! Entries live in the authenticated payload only: whoever writes them holds
//! the KEK, and the fleet learns them with its normal conditional reads.

use crate::clock::UnixTime;
use serde::{Deserialize, Serialize};

use super::rfc3339::{format_rfc3339, is_representable, parse_rfc3339};
use super::timing::Timing;
use crate::error::{Error, KeysetError};
use crate::revocation::{PRINCIPAL_DIGEST_LEN, Revocation, RevocationSelector};

/// Most revocation entries a document may hold, and so the most live ones a
/// write may leave: each is checked on no verify (the list is indexed), but
/// every instance holds them and every document carries them (about 150
/// bytes each, well inside the document's 1 MiB).
pub const MAX_REVOCATIONS: usize = 1000;

/// Longest client id an entry may name, in bytes.
pub const MAX_CLIENT_ID_LEN: usize = 256;

/// Until when `entry` can still cover a valid state: `before` plus the longest
/// TTL the keyset allows (T) plus the clock skew (S), as a verifier S behind
/// still accepts a state issued just before `before` until then.
pub fn live_until(entry: &Revocation, timing: &Timing) -> UnixTime {
    entry.before + timing.ttl.saturating_add(timing.max_skew)
}

/// Whether a write at `now` may drop `entry`: S past [`live_until`], so that
/// an instance whose clock is S behind the writer's also sees it expired.
pub fn prunable(entry: &Revocation, timing: &Timing, now: UnixTime) -> bool {
    now >= live_until(entry, timing) + timing.max_skew
}

/// The first entry live in `adopted` (judged with its timing, at `now`) that
/// `candidate` no longer holds: a document that drops it would let revoked
/// states verify again.
pub(crate) fn dropped_live<'a>(
    adopted: &'a [Revocation],
    timing: &Timing,
    candidate: &[Revocation],
    now: f64,
) -> Option<&'a Revocation> {
    adopted
        .iter()
        .filter(|r| now < live_until(r, timing).as_secs_f64())
        .find(|r| !candidate.contains(r))
}

/// The entry as the document stores it.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRevocation {
    kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    principal_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client_id: Option<String>,
    before: String,
}

fn bad(field: String, problem: impl Into<String>) -> Error {
    Error::Keyset(KeysetError::Invalid {
        field,
        problem: problem.into(),
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<[u8; PRINCIPAL_DIGEST_LEN]> {
    if text.len() != 2 * PRINCIPAL_DIGEST_LEN
        || !text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return None;
    }
    let mut out = [0u8; PRINCIPAL_DIGEST_LEN];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

impl RawRevocation {
    pub(super) fn from_entry(r: &Revocation) -> Self {
        let (principal_sha256, client_id) = match &r.selector {
            RevocationSelector::Principal(d) => (Some(hex(d)), None),
            RevocationSelector::ClientId(id) => (None, Some(id.clone())),
            _ => (None, None),
        };
        Self {
            kind: r.kind().to_owned(),
            principal_sha256,
            client_id,
            before: format_rfc3339(r.before.as_secs_f64()),
        }
    }

    /// The entry, or an error naming `revocations[i]`'s field.
    pub(super) fn into_entry(self, i: usize) -> Result<Revocation, Error> {
        let field = |name: &str| format!("revocations[{i}].{name}");
        let before = parse_rfc3339(&self.before).map_err(|p| bad(field("before"), p))?;
        let selector = match (
            self.kind.as_str(),
            self.principal_sha256.as_deref(),
            self.client_id,
        ) {
            ("all", None, None) => RevocationSelector::All,
            ("client_id", None, Some(id)) => RevocationSelector::ClientId(id),
            ("principal", Some(d), None) => {
                RevocationSelector::Principal(unhex(d).ok_or_else(|| {
                    bad(field("principal_sha256"), "must be 64 lowercase hex digits")
                })?)
            }
            (kind @ ("all" | "client_id" | "principal"), ..) => {
                return Err(bad(
                    field("kind"),
                    format!(
                        "a {kind:?} entry names exactly its own selector (all: none, client_id: client_id, principal: principal_sha256)"
                    ),
                ));
            }
            (other, ..) => {
                return Err(bad(
                    field("kind"),
                    format!(
                        "{other:?} is not a revocation kind this release knows (all, client_id, principal)"
                    ),
                ));
            }
        };
        let before = UnixTime::from_secs_f64(before)
            .ok_or_else(|| bad(field("before"), "must be a time"))?;
        Ok(Revocation { selector, before })
    }
}

/// Checks the entries every reader relies on: within the cap, times a document
/// can hold, client ids that are not empty or huge, no entry twice.
pub(super) fn validate(entries: &[Revocation]) -> Result<(), Error> {
    if entries.len() > MAX_REVOCATIONS {
        return Err(bad(
            "revocations".into(),
            format!(
                "{} entries, more than the {MAX_REVOCATIONS} a keyset may hold",
                entries.len()
            ),
        ));
    }
    for (i, r) in entries.iter().enumerate() {
        if !is_representable(r.before) {
            return Err(bad(
                format!("revocations[{i}].before"),
                "must be between 1970 and 9999 (Unix seconds, not milliseconds)",
            ));
        }
        if let RevocationSelector::ClientId(id) = &r.selector
            && (id.is_empty() || id.len() > MAX_CLIENT_ID_LEN)
        {
            return Err(bad(
                format!("revocations[{i}].client_id"),
                format!("must be 1 to {MAX_CLIENT_ID_LEN} bytes"),
            ));
        }
        if entries[..i].contains(r) {
            return Err(bad(
                format!("revocations[{i}]"),
                "duplicates an earlier entry",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::principal::Principal;

    #[test]
    fn entries_round_trip_and_errors_name_the_field() {
        let p = Principal::from_components("app", None, Some("alice"));
        for r in [
            Revocation::principal(&p, UnixTime::from_millis(1_782_345_600_500)),
            Revocation::client_id("app", UnixTime::from_secs(1)),
            Revocation::all_before(UnixTime::from_secs(2)),
        ] {
            let raw = RawRevocation::from_entry(&r);
            assert_eq!(raw.into_entry(0).unwrap(), r);
        }
        let parse = |json: &str| {
            serde_json::from_str::<RawRevocation>(json)
                .map_err(|e| bad("serde".into(), e.to_string()))
                .and_then(|r| r.into_entry(3))
        };
        for (json, field) in [
            (
                r#"{"kind":"every","before":"1970-01-01T00:00:01Z"}"#,
                "revocations[3].kind",
            ),
            (
                r#"{"kind":"all","client_id":"x","before":"1970-01-01T00:00:01Z"}"#,
                "revocations[3].kind",
            ),
            (
                r#"{"kind":"principal","principal_sha256":"AB","before":"1970-01-01T00:00:01Z"}"#,
                "revocations[3].principal_sha256",
            ),
            (
                r#"{"kind":"all","before":"yesterday"}"#,
                "revocations[3].before",
            ),
            (
                r#"{"kind":"all","before":"1970-01-01T00:00:01Z","x":1}"#,
                "serde",
            ),
        ] {
            let err = parse(json).unwrap_err();
            assert!(
                matches!(&err, Error::Keyset(KeysetError::Invalid { field: f, .. }) if f == field),
                "{json}: {err}"
            );
        }
        let twice = [
            Revocation::all_before(UnixTime::from_secs(2)),
            Revocation::all_before(UnixTime::from_secs(2)),
        ];
        assert!(
            validate(&twice)
                .unwrap_err()
                .to_string()
                .contains("revocations[1]")
        );
        assert!(validate(&[Revocation::client_id("", UnixTime::from_secs(2))]).is_err());
        let many: Vec<_> = (0..=MAX_REVOCATIONS)
            .map(|i| Revocation::all_before(UnixTime::from_secs(i as u64)))
            .collect();
        assert!(
            validate(&many)
                .unwrap_err()
                .to_string()
                .contains("1001 entries")
        );
    }

    #[test]
    fn entries_stay_until_no_covered_state_can_verify() {
        let t = Timing::new(
            Duration::from_secs(30),
            Duration::from_secs(60),
            Duration::from_secs(600),
        );
        let r = Revocation::all_before(UnixTime::from_secs(1000));
        assert_eq!(live_until(&r, &t), UnixTime::from_secs(1660));
        assert!(
            !prunable(&r, &t, UnixTime::from_secs(1719))
                && prunable(&r, &t, UnixTime::from_secs(1720))
        );
        let adopted = [r.clone()];
        assert_eq!(dropped_live(&adopted, &t, &[], 1659.0), Some(&r));
        assert_eq!(dropped_live(&adopted, &t, &[], 1660.0), None);
        assert_eq!(dropped_live(&adopted, &t, &adopted, 0.0), None);
    }
}
