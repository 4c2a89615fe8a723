//! The rotation timeline as pure functions of (document, time).
//!
//! Every instance computes its ring from the shared document and its own
//! clock, so there is no coordinator. With R = refresh interval, S = max clock
//! skew, T = state TTL and P = propagation window (default 2R + S):
//!
//! ```text
//! rotate at t0:   new.activate_at = t0 + P      old.retire_at = new.activate_at + P + T + S
//!   phase 1  [old, new]  t0 <= t < activate     every instance loads new within R (+S skew)
//!   phase 2  [new, old]  activate <= t < retire new seals; old states live out their TTL
//!   phase 3  [new]       t >= retire            old is gone from every ring
//! ```

// Public for property tests and fuzzing (feature `internals`); the crate's own
// API reaches the timeline through keyset operations and inspection.
#![cfg_attr(not(feature = "internals"), allow(unreachable_pub))]

use crate::clock::UnixTime;
use crate::error::{Error, KeysetError};
pub use crate::keyset::Timing;
use crate::keyset::{KeyEntry, Keyset, document_time};

/// The least gap between two keys' activations: the document's time resolution.
const ACTIVATION_STEP: f64 = 0.001;

/// Where a keyset is in its rotation at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// `[old, new]`: a new key is known but not yet sealing.
    One = 1,
    /// `[new, old]`: the new key seals; older keys still unseal.
    Two = 2,
    /// `[new]`: one key; no rotation in flight.
    Three = 3,
}

/// The ring an instance should hold at one instant.
#[derive(Debug, Clone, PartialEq)]
pub struct RingPlan {
    /// Entry id of the sealing key.
    pub primary: String,
    /// Entry ids that unseal: the primary first, then the others, newest first.
    pub ring: Vec<String>,
    /// The rotation phase.
    pub phase: Phase,
}

/// Whether entry `e` unseals at `t`.
pub fn unseals_at(e: &KeyEntry, t: f64) -> bool {
    e.retire_at.is_none_or(|r| t < r.as_secs_f64())
}

/// The ring at `t`: every key not yet retired unseals (a new key from the
/// moment an instance loads it); the primary is the key with the latest
/// `activate_at <= t` (or, before any key activates, the earliest one).
/// `None` when every key has retired.
pub fn ring_at(doc: &Keyset, t: f64) -> Option<RingPlan> {
    let mut live: Vec<&KeyEntry> = doc.keys.iter().filter(|e| unseals_at(e, t)).collect();
    // Newest first; ties broken by entry id so every instance agrees.
    live.sort_by(|a, b| {
        b.activate_at
            .cmp(&a.activate_at)
            .then_with(|| a.entry.cmp(&b.entry))
    });
    // A keyset created by a clock ahead of this one has no active key yet: its
    // earliest key seals (every instance unseals it already).
    let primary = live
        .iter()
        .find(|e| e.activate_at <= UnixTime::from_finite_secs(t))
        .or_else(|| live.last())?;
    let mut ring = vec![primary.entry.clone()];
    ring.extend(
        live.iter()
            .filter(|e| e.entry != primary.entry)
            .map(|e| e.entry.clone()),
    );
    let phase = if live
        .iter()
        .any(|e| e.activate_at > UnixTime::from_finite_secs(t))
    {
        Phase::One
    } else if live.len() > 1 {
        Phase::Two
    } else {
        Phase::Three
    };
    Some(RingPlan {
        primary: primary.entry.clone(),
        ring,
        phase,
    })
}

/// When the next phase change happens after `t`, if any is scheduled.
pub fn next_change_after(doc: &Keyset, t: f64) -> Option<(f64, Phase)> {
    let mut events: Vec<f64> = doc
        .keys
        .iter()
        .flat_map(|e| [Some(e.activate_at), e.retire_at])
        .flatten()
        .map(UnixTime::as_secs_f64)
        .filter(|x| *x > t)
        .collect();
    events.sort_by(f64::total_cmp);
    events.into_iter().find_map(|at| {
        let before = ring_at(doc, t).map(|p| (p.phase, p.ring));
        let after = ring_at(doc, at).map(|p| (p.phase, p.ring));
        (before != after).then(|| (at, after.map_or(Phase::Three, |a| a.0)))
    })
}

/// How a rotation treats the current timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RotateMode {
    /// Refuse while a rotation is in flight.
    Scheduled,
    /// Rotate even while one is in flight (the timeline is extended safely).
    Forced,
    /// Key compromise: the new key seals at once and every other key retires
    /// now, so states sealed under them are rejected from now on.
    Compromise,
}

/// Why a rotation now would overlap one in flight, if it would.
pub fn in_flight(doc: &Keyset, now: f64) -> Option<String> {
    let plan = ring_at(doc, now)?;
    match plan.phase {
        Phase::Three => None,
        Phase::One => Some(format!(
            "phase 1: key {} is not sealing yet",
            plan.ring
                .iter()
                .find(|e| *e != &plan.primary)
                .map_or("?", String::as_str)
        )),
        Phase::Two => Some(format!(
            "phase 2: older keys still unseal until their retire time ({} keys in the ring)",
            plan.ring.len()
        )),
    }
}

/// The document after a rotation that adds `new` (its `activate_at`/`retire_at` are set here).
///
/// # Errors
/// [`KeysetError::RotationInFlight`] in `Scheduled` mode while a rotation is in flight.
pub fn rotated(
    doc: &Keyset,
    mut new: KeyEntry,
    now: f64,
    timing: &Timing,
    mode: RotateMode,
) -> Result<Keyset, Error> {
    if mode == RotateMode::Scheduled
        && let Some(why) = in_flight(doc, now)
    {
        return Err(Error::Keyset(KeysetError::RotationInFlight(why)));
    }
    new.created_at = UnixTime::from_finite_secs(now);
    // Keys become primary in the order they were written, whatever the clocks of
    // the operators or instances that wrote them: a forced rotation by a clock
    // behind the previous rotator's would otherwise activate its key first, and
    // the key in flight would seal later, until its retirement cut its states short.
    let latest = doc
        .keys
        .iter()
        .filter(|e| unseals_at(e, now))
        .map(|e| e.activate_at.as_secs_f64())
        .fold(f64::NEG_INFINITY, f64::max);
    // Times at the document's resolution: what is planned is what is written.
    new.activate_at =
        UnixTime::from_finite_secs(document_time(if mode == RotateMode::Compromise {
            now
        } else {
            (now + timing.propagation.as_secs_f64()).max(latest + ACTIVATION_STEP)
        }));
    new.retire_at = None;
    let retire = document_time(if mode == RotateMode::Compromise {
        now
    } else {
        new.activate_at.as_secs_f64() + timing.retire_delay().as_secs_f64()
    });
    let mut next = doc.clone();
    // The claim on this rotation is spent.
    next.rotation_claim = None;
    // Entries out of every instance's ring (even one S behind) are dropped.
    next.keys.retain(|e| {
        e.retire_at
            .is_none_or(|r| r.as_secs_f64() + timing.max_skew.as_secs_f64() > now)
    });
    // So are revocations that cover nothing valid any more, on any instance's clock.
    let profile = doc.timing.unwrap_or(*timing);
    next.revocations
        .retain(|r| !crate::keyset::prunable(r, &profile, UnixTime::from_finite_secs(now)));
    for e in &mut next.keys {
        let r = e.retire_at.map_or(retire, |r| {
            r.min(UnixTime::from_finite_secs(retire)).as_secs_f64()
        });
        // A key cut short before it ever activated is cancelled: it never enters a ring.
        e.activate_at = e.activate_at.min(UnixTime::from_finite_secs(r));
        e.retire_at = Some(UnixTime::from_finite_secs(r));
    }
    next.keys.push(new);
    next.generation = doc.next_generation()?;
    Ok(next)
}
