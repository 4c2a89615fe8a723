//! What operators ask of a keyset: where each key stands ([`describe_keyset`],
//! no KMS access; [`keyset_status`], each live key unwrapped and exercised),
//! and whether the fleet can serve from it ([`check_keyset`]). Nothing here writes.

use std::sync::Arc;

use super::proof::unwrap_entry;
use super::timeline::{Phase, next_change_after, ring_at};
use super::trust::KeysetTrust;
use crate::clock::UnixTime;
use crate::codec::{AesGcmCodec, StateCodec};
use crate::error::{DataError, Error};
use crate::key::{KeyId, RingKey};
use crate::keyset::{KeyEntry, Keyset, KeysetStore};
use crate::provider::ProviderRegistry;
use crate::ring::{KeyRing, RingHandle};

/// An entry's part in the ring at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Role {
    /// Seals (and unseals).
    Primary,
    /// Known, unseals, seals once it activates.
    Pending,
    /// Unseals states sealed before a newer key activated.
    UnsealOnly,
    /// In no ring any more.
    Retired,
}

impl Role {
    /// `primary`, `pending`, `unseal-only` or `retired`.
    pub fn label(self) -> &'static str {
        match self {
            Self::Primary => "primary",
            Self::Pending => "pending",
            Self::UnsealOnly => "unseal-only",
            Self::Retired => "retired",
        }
    }
}

/// Whether an entry's key could be used, as far as was checked.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Availability {
    /// It unwrapped, to the recorded key id, and sealed and unsealed a probe.
    Available,
    /// It could not be used; the reason names the cause (never key material).
    Unavailable(String),
    /// Not checked: retired, or the inspection made no KMS calls.
    NotChecked,
}

/// One entry of the document at one instant.
#[derive(Debug, Clone, PartialEq)]
pub struct EntryStatus {
    /// The entry id (`k_…`).
    pub entry: String,
    /// The key id: unwrapped when checked, else as the document records it.
    pub kid: Option<KeyId>,
    /// The KEK URI.
    pub kek: String,
    /// Its role at the instant.
    pub role: Role,
    /// When it seals from.
    pub activate_at: UnixTime,
    /// When it stops unsealing.
    pub retire_at: Option<UnixTime>,
    /// Whether it can be used.
    pub availability: Availability,
}

/// The keyset at one instant: its phase and every entry's role and availability.
#[derive(Debug, Clone, PartialEq)]
pub struct KeysetStatus {
    /// The document inspected.
    pub keyset: Keyset,
    /// The instant.
    pub now: UnixTime,
    /// The rotation phase (`None`: every key has retired).
    pub phase: Option<Phase>,
    /// Entry ids of the ring a server holds at the instant: the primary first,
    /// then the others, newest first.
    pub ring: Vec<String>,
    /// Every entry, in document order.
    pub entries: Vec<EntryStatus>,
    /// The next phase change, if one is scheduled.
    pub next_change: Option<(UnixTime, Phase)>,
}

impl KeysetStatus {
    /// The sealing entry.
    pub fn primary(&self) -> Option<&EntryStatus> {
        self.entries.iter().find(|e| e.role == Role::Primary)
    }

    /// A key seals, and no key in the ring was found unavailable.
    pub fn healthy(&self) -> bool {
        self.primary().is_some() && self.unavailable_live().next().is_none()
    }

    /// Entries in the ring (every role but retired) that were found unavailable.
    pub fn unavailable_live(&self) -> impl Iterator<Item = &EntryStatus> {
        self.entries.iter().filter(|e| {
            e.role != Role::Retired && matches!(e.availability, Availability::Unavailable(_))
        })
    }
}

/// Where every entry of `doc` stands at `now`, from the document alone (no KMS access).
pub fn describe_keyset(doc: &Keyset, now: UnixTime) -> KeysetStatus {
    let now = now.as_secs_f64();
    let plan = ring_at(doc, now);
    let role = |e: &KeyEntry| match &plan {
        Some(p) if p.primary == e.entry => Role::Primary,
        Some(p) if p.ring.contains(&e.entry) => {
            if e.activate_at > UnixTime::from_finite_secs(now) {
                Role::Pending
            } else {
                Role::UnsealOnly
            }
        }
        _ => Role::Retired,
    };
    KeysetStatus {
        keyset: doc.clone(),
        now: UnixTime::from_finite_secs(now),
        phase: plan.as_ref().map(|p| p.phase),
        ring: plan.as_ref().map(|p| p.ring.clone()).unwrap_or_default(),
        entries: doc
            .keys
            .iter()
            .map(|e| EntryStatus {
                entry: e.entry.clone(),
                kid: e.kid,
                kek: e.kek.clone(),
                role: role(e),
                activate_at: e.activate_at,
                retire_at: e.retire_at,
                availability: Availability::NotChecked,
            })
            .collect(),
        next_change: next_change_after(doc, now).map(|(t, p)| (UnixTime::from_finite_secs(t), p)),
    }
}

/// [`describe_keyset`], with every live key unwrapped through `registry` (once
/// each, as a server would), checked against its recorded key id, and used to
/// seal and unseal a probe. A key that fails is reported, not fatal.
pub async fn keyset_status(
    doc: &Keyset,
    registry: &ProviderRegistry,
    now: UnixTime,
) -> KeysetStatus {
    let mut status = describe_keyset(doc, now);
    for (entry, st) in doc.keys.iter().zip(&mut status.entries) {
        if st.role == Role::Retired {
            continue;
        }
        match unwrap_entry(doc, entry, registry).await {
            Ok((secret, kid)) => {
                st.kid = Some(kid);
                st.availability = match probe(RingKey::with_format(&secret, entry.alg)) {
                    Ok(()) => Availability::Available,
                    Err(e) => Availability::Unavailable(e.to_string()),
                };
            }
            Err(e) => st.availability = Availability::Unavailable(e.to_string()),
        }
    }
    status
}

/// The ring a server holds for `doc` at `now`: every live key unwrapped
/// through `registry` (checked against its recorded key id), the primary
/// first, carrying the document's revocations.
///
/// # Errors
/// [`DataError::KeysUnavailable`] when every key has retired; the first unwrap
/// error, naming its entry.
pub async fn keyset_ring(
    doc: &Keyset,
    registry: &ProviderRegistry,
    now: UnixTime,
) -> Result<KeyRing, Error> {
    let now = now.as_secs_f64();
    let plan = ring_at(doc, now).ok_or_else(|| {
        Error::Data(DataError::KeysUnavailable(
            "every key in the keyset has retired".into(),
        ))
    })?;
    let mut keys = Vec::with_capacity(plan.ring.len());
    for id in &plan.ring {
        let Some(entry) = doc.entry(id) else { continue };
        let (secret, _) = unwrap_entry(doc, entry, registry).await.map_err(|e| {
            Error::Data(DataError::KeysUnavailable(format!(
                "entry {}: {e}",
                entry.entry
            )))
        })?;
        keys.push(Arc::new(RingKey::with_format(&secret, entry.alg)));
    }
    let revocations = crate::revocation::RevocationList::new(&doc.revocations);
    Ok(KeyRing::from_keys(keys)?.with_revocations(revocations))
}

/// Seals and unseals a probe with one key, exactly as the data plane does.
fn probe(key: RingKey) -> Result<(), Error> {
    let ring = KeyRing::from_keys(vec![Arc::new(key)])?;
    let codec = AesGcmCodec::new(Arc::new(RingHandle::new(ring)));
    let token = codec.seal(b"stateseal check")?;
    if codec.unseal(&token)? == b"stateseal check" {
        Ok(())
    } else {
        Err(Error::Data(DataError::Seal("the probe did not round-trip")))
    }
}

/// The answer of [`check_keyset`]: healthy when `problems` is empty.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckReport {
    /// The keyset's status, when the store could be read.
    pub status: Option<KeysetStatus>,
    /// What makes the keyset unfit to serve, each naming what to do.
    pub problems: Vec<String>,
    /// What an operator should know but that does not stop serving.
    pub notes: Vec<String>,
}

impl CheckReport {
    /// No problems.
    pub fn healthy(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Fraction of the seal budget past which `check` notes that a rotation is due.
const SEAL_BUDGET_NOTE: f64 = 0.75;

/// Reads `store` and checks what a fleet needs to serve at `now`: `trust`
/// accepts the document (tag, pins, freshness: a refusal is a problem naming
/// its reason), a key seals, every live key unwraps, seals and unseals, this
/// clock is not behind the writers' by more than the keyset's S, and the
/// primary key's seal budget (`max_seals_per_key`) is not nearly spent.
pub async fn check_keyset(
    store: &dyn KeysetStore,
    registry: &ProviderRegistry,
    trust: &KeysetTrust,
    now: UnixTime,
    max_seals_per_key: u64,
) -> CheckReport {
    let at = now;
    let now = at.as_secs_f64();
    let mut report = CheckReport {
        status: None,
        problems: Vec::new(),
        notes: Vec::new(),
    };
    let stored = match store.load().await {
        Ok(Some(stored)) => stored,
        Ok(None) => {
            report.problems.push(format!(
                "{} holds no keyset; create one with `stateseal init`",
                store.uri()
            ));
            return report;
        }
        Err(e) => {
            report.problems.push(format!("cannot read the keyset: {e}"));
            return report;
        }
    };
    let verified = match trust.open(registry, store.uri(), &stored, at).await {
        Ok(verified) => verified,
        Err(e) => {
            report
                .problems
                .push(format!("the keyset is not trusted: {e}"));
            return report;
        }
    };
    if !verified.is_authenticated() {
        report.notes.push(
            "the keyset is unauthenticated (stateseal.keyset/v1), accepted by configuration: anyone who can write the store can change its keys; convert it with `stateseal keyset upgrade`".into(),
        );
    }
    let doc = verified.doc;
    let status = keyset_status(&doc, registry, at).await;
    if status.primary().is_none() {
        report
            .problems
            .push("every key has retired: nothing can seal; run `stateseal rotate --force`".into());
    }
    for e in status.unavailable_live() {
        if let Availability::Unavailable(why) = &e.availability {
            report.problems.push(format!(
                "{} key {} (entry {}) is unavailable: {why}",
                e.role.label(),
                e.kid.map_or_else(|| "?".into(), KeyId::to_hex),
                e.entry
            ));
        }
    }
    let skew = doc.timing.unwrap_or_default().max_skew.as_secs_f64();
    if let Some(newest) = doc
        .keys
        .iter()
        .map(|e| e.created_at.as_secs_f64())
        .reduce(f64::max)
        && newest > now + skew
    {
        report.problems.push(format!(
            "the newest entry was written {:.0}s after this clock's now: this clock is behind a writer's by more than S ({skew}s); fix the clocks (NTP)",
            newest - now
        ));
    }
    match doc.timing {
        None => report.notes.push(
            "the keyset has no timing profile: rotations use the defaults or the flags given"
                .into(),
        ),
        Some(t) => {
            if let Err(e) = t.validate() {
                report.problems.push(format!("timing profile: {e}"));
            }
        }
    }
    if let Some(p) = status.primary().and_then(|p| doc.entry(&p.entry)) {
        let used = p.seals_reserved as f64 / max_seals_per_key as f64;
        if used >= SEAL_BUDGET_NOTE {
            report.notes.push(format!(
                "the fleet has reserved {:.0}% of the primary key's seal budget; a rotation is due",
                used * 100.0
            ));
        }
    }
    report.status = Some(status);
    report
}
