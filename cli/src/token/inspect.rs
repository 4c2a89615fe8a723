//! `stateseal token inspect`: what a token says about itself (no decryption).

use std::io::Write;

use stateseal::rotation::{Role, keyset_status};
use stateseal::token_key_id;

use super::input::token_arg;
use super::{InspectArgs, verified_from_store};
use crate::error::CliError;
use crate::flag_values::instant;
use crate::keyset::{read_now, registry};
use crate::output::{line, object};

/// `token inspect`: what a token says about itself, and whether a ring holds its key.
pub(super) async fn inspect(a: InspectArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let now = read_now(a.now)?;
    let token = token_arg(&a.token)?;
    let Some(kid) = token_key_id(&token) else {
        return Err(CliError::Rejected(
            "not a well-formed token (it must start with `v1.` or `v2.` and hold a key id, nonce and tag in base64url)"
                .into(),
        ));
    };
    // Well-formed: it starts with its version and a dot.
    let version = if token.starts_with("v2.") { "v2" } else { "v1" };
    // Where the key stands in the keyset at --now: its role, or absent.
    let mut holder = None;
    if let Some(uri) = &a.keyset {
        let v = verified_from_store(uri, &a.trust, now).await?;
        let st = keyset_status(&v.doc, &registry(uri), instant(now)?).await;
        holder = Some(st.entries.into_iter().find(|e| e.kid == Some(kid)));
    }
    let in_ring = holder
        .as_ref()
        .map(|h| h.as_ref().is_some_and(|e| e.role != Role::Retired));
    if a.json {
        let mut v = object(
            vec![
                ("version", version.into()),
                ("kid", kid.to_hex().into()),
                ("length", token.len().into()),
                (
                    "in_ring",
                    in_ring.map_or(serde_json::Value::Null, Into::into),
                ),
            ],
            &[("now", Some(now))],
        );
        if let Some(Some(e)) = &holder {
            v["entry"] = e.entry.clone().into();
            v["role"] = e.role.label().into();
        }
        line(out, v)?;
    } else {
        line(
            out,
            format!(
                "version {version}, key id {kid}, {} characters",
                token.len()
            ),
        )?;
        match &holder {
            None => {}
            Some(Some(e)) if e.role != Role::Retired => line(
                out,
                format!(
                    "the ring at --now holds key {kid} (entry {}, {})",
                    e.entry,
                    e.role.label()
                ),
            )?,
            Some(Some(e)) => line(
                out,
                format!(
                    "key {kid} (entry {}) has retired: the ring at --now does not hold it",
                    e.entry
                ),
            )?,
            Some(None) => line(
                out,
                format!(
                    "the ring at --now does not hold key {kid}: not in this keyset (or its entry was pruned)"
                ),
            )?,
        }
    }
    if in_ring == Some(false) {
        return Err(CliError::Reported(1));
    }
    Ok(())
}
