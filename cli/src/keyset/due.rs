//! `stateseal rotate --if-due`: what a scheduled job (a Kubernetes CronJob)
//! runs, so that read-only servers need not write the keyset. It rotates when
//! the primary is due by age or by the fleet's seal reservations, else renews
//! the document when less than half its validity is left, else does nothing;
//! each answer exits 0 and says which. The rule itself is the library's
//! (`stateseal::rotation::rotation_due`, `renew_if_due`): the fleet
//! simulation's rotator job runs the same one.

use stateseal::UnixTime;
use std::io::Write;

use stateseal::rotation::VerifiedKeyset;

use crate::error::CliError;
use crate::output::{line, object, when};

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
                &[("expires_at", doc.expires_at.map(UnixTime::as_secs_f64))],
            ),
        );
    }
    let fresh = doc
        .expires_at
        .map_or_else(|| "?".into(), |t| when(t.as_secs_f64(), now));
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
