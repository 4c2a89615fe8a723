//! `stateseal rotate --if-due`: what a scheduled job (a Kubernetes CronJob)
//! runs, so that read-only servers need not write the keyset. It rotates when
//! the primary is due by age or by the fleet's seal reservations, else renews
//! the document when less than half its validity is left, else does nothing;
//! each answer exits 0 and says which.

use std::io::Write;

use stateseal::rotation::{
    DEFAULT_KEYSET_VALIDITY, KeysetTrust, Phase, SchedulerConfig, VerifiedKeyset, describe_keyset,
    renew_keyset,
};
use stateseal::{KeysetStore, ProviderRegistry};

use crate::error::CliError;
use crate::output::{line, object, when};

/// What is due on `v` at `now`, if anything: `Some(reason)` for a rotation.
pub(crate) fn rotation_due(v: &VerifiedKeyset, now: f64, period: f64) -> Option<String> {
    let st = describe_keyset(&v.doc, now);
    if st.phase != Some(Phase::Three) {
        return None;
    }
    let primary = st.primary()?;
    let entry = v.doc.entry(&primary.entry)?;
    let max = SchedulerConfig::default().max_seals_per_key;
    if now - primary.activate_at >= period {
        Some(format!(
            "the primary key has sealed for {:.0} days (rotation period {:.0} days)",
            (now - primary.activate_at) / 86_400.0,
            period / 86_400.0
        ))
    } else if entry.seals_reserved >= max {
        Some(format!(
            "the fleet has reserved {} seals under the primary key (limit {max})",
            entry.seals_reserved
        ))
    } else {
        None
    }
}

/// Renews `v` when less than half its validity is left; what was written, if anything.
pub(crate) async fn renew_if_due(
    store: &dyn KeysetStore,
    registry: &ProviderRegistry,
    trust: &KeysetTrust,
    v: &VerifiedKeyset,
    now: f64,
) -> Result<Option<VerifiedKeyset>, CliError> {
    if !v.renewal_due(now, DEFAULT_KEYSET_VALIDITY) {
        return Ok(None);
    }
    renew_keyset(
        store,
        registry,
        trust,
        v.doc.generation,
        DEFAULT_KEYSET_VALIDITY,
        now,
    )
    .await
    .map(Some)
    .map_err(CliError::from)
}

/// Prints the answer when nothing or a renewal was written.
pub(crate) fn report(
    out: &mut dyn Write,
    renewed: Option<&VerifiedKeyset>,
    v: &VerifiedKeyset,
    now: f64,
    json: bool,
) -> Result<(), CliError> {
    let (action, doc) = match renewed {
        Some(r) => ("renewed", r),
        None => ("none", v),
    };
    if json {
        return line(
            out,
            object(
                vec![
                    ("action", action.into()),
                    ("keyset", doc.doc.id.clone().into()),
                    ("generation", doc.doc.generation.into()),
                ],
                &[("expires_at", doc.expires_at)],
            ),
        );
    }
    let fresh = doc.expires_at.map_or_else(|| "?".into(), |t| when(t, now));
    line(
        out,
        match renewed {
            Some(_) => format!(
                "no rotation due; renewed the keyset (generation {}), fresh until {fresh}",
                doc.doc.generation
            ),
            None => format!(
                "nothing due: no rotation, and the keyset is fresh until {fresh} (renewed once less than half is left)"
            ),
        },
    )
}
