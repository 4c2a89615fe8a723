//! Which keyset documents an instance adopts.
//!
//! A store can hand back a document the fleet has already moved past: a
//! lagging replica, a restored object version, a careless copy. Adopting it
//! would bring back keys an emergency rotation retired, so each instance keeps
//! the document it last adopted and refuses anything older or foreign. The
//! watermark lives in memory: a restarted instance adopts whatever the store
//! holds first (the operations docs say so).

use crate::error::Error;
use crate::keyset::Keyset;

/// Why a document was not adopted; also the `reason` label of
/// `stateseal_keyset_rejected_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The store held bytes that are not a valid keyset document.
    Invalid,
    /// Two entries unwrap to the same key id.
    DuplicateKey,
    /// A lower generation than the one already adopted.
    Rollback,
    /// The same generation with different contents (a write that bypassed compare-and-swap).
    Rewritten,
    /// Another keyset id than the one already adopted.
    OtherKeyset,
    /// The document's timing profile allows shorter-lived states than this
    /// instance seals: its rotations would retire keys under live states.
    Timing,
}

impl Refusal {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::Invalid => "invalid",
            Self::DuplicateKey => "duplicate_key",
            Self::Rollback => "rollback",
            Self::Rewritten => "rewritten",
            Self::OtherKeyset => "other_keyset",
            Self::Timing => "timing",
        }
    }

    /// Counts and logs the refusal (reason and generations only: a document holds no secrets,
    /// but its entries are not the log's business) and returns the error a refresh reports.
    pub(crate) fn record(self, store: &str, detail: String) -> Error {
        metrics::counter!("stateseal_keyset_rejected_total", "reason" => self.label()).increment(1);
        tracing::warn!(store, reason = self.label(), %detail, "keyset document refused; serving on the last good document");
        Error::KeysetRefused {
            reason: self.label(),
            detail,
        }
    }
}

/// Whether `candidate` may replace `adopted` (the last document this instance
/// adopted), for an instance whose states live `ttl` seconds.
pub(crate) fn admit(
    adopted: Option<&Keyset>,
    candidate: &Keyset,
    ttl: f64,
) -> Result<(), (Refusal, String)> {
    if let Some(t) = candidate.timing
        && ttl > t.ttl
    {
        return Err((
            Refusal::Timing,
            format!(
                "this instance seals states for {ttl}s but keyset {} rotates for states of at most {}s (its T); lower the configured ttl, or re-create the keyset with a longer --state-ttl",
                candidate.id, t.ttl
            ),
        ));
    }
    let Some(adopted) = adopted else {
        return Ok(());
    };
    if candidate.id != adopted.id {
        return Err((
            Refusal::OtherKeyset,
            format!(
                "the store now holds keyset {} but this instance serves keyset {}; restart the instance to switch keysets",
                candidate.id, adopted.id
            ),
        ));
    }
    if candidate.generation < adopted.generation {
        return Err((
            Refusal::Rollback,
            format!(
                "generation {} is older than generation {} already adopted",
                candidate.generation, adopted.generation
            ),
        ));
    }
    if candidate.generation == adopted.generation && candidate != adopted {
        return Err((
            Refusal::Rewritten,
            format!(
                "generation {} changed without a new generation number",
                candidate.generation
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyset::KeyEntry;

    fn doc(id: &str, generation: u64, activate_at: f64) -> Keyset {
        Keyset {
            id: id.into(),
            generation,
            keys: vec![KeyEntry {
                entry: "k_1".into(),
                kek: "local:///k".into(),
                wrapped: vec![1],
                created_at: 1.0,
                activate_at,
                retire_at: None,
                seals_reserved: 0,
                kid: None,
            }],
            timing: Some(crate::keyset::Timing::new(30.0, 60.0, 600.0)),
        }
    }

    #[test]
    fn refuses_older_foreign_and_rewritten_documents() {
        let adopted = doc("ks_a", 5, 1.0);
        assert!(admit(None, &doc("ks_b", 1, 1.0), 600.0).is_ok());
        assert!(admit(Some(&adopted), &doc("ks_a", 5, 1.0), 600.0).is_ok());
        assert!(admit(Some(&adopted), &doc("ks_a", 6, 9.0), 600.0).is_ok());
        let reason = |d: Keyset| admit(Some(&adopted), &d, 600.0).unwrap_err().0;
        assert_eq!(reason(doc("ks_a", 4, 1.0)), Refusal::Rollback);
        assert_eq!(reason(doc("ks_a", 5, 2.0)), Refusal::Rewritten);
        assert_eq!(reason(doc("ks_b", 9, 1.0)), Refusal::OtherKeyset);
    }

    #[test]
    fn refuses_a_profile_shorter_than_the_configured_ttl() {
        let (refusal, detail) = admit(None, &doc("ks_a", 1, 1.0), 900.0).unwrap_err();
        assert_eq!(refusal, Refusal::Timing);
        assert!(
            detail.contains("900s") && detail.contains("600s"),
            "{detail}"
        );
        let mut old = doc("ks_a", 1, 1.0);
        old.timing = None;
        assert!(
            admit(None, &old, 900.0).is_ok(),
            "documents without a profile keep today's rules"
        );
    }
}
