//! Property tests of the pure rotation timeline over random timelines, clock
//! skews and refresh delays: the ring is always well formed, and a state
//! sealed by any instance opens on any other for its whole TTL.

use proptest::prelude::*;
use stateseal::rotation::{Phase, RotateMode, Timing, ring_at, rotated, unseals_at};
use stateseal::{KeyEntry, Keyset};
use std::time::Duration;

fn entry(n: usize, at: f64) -> KeyEntry {
    KeyEntry {
        kid: None,
        alg: stateseal::TokenFormat::V1,
        entry: format!("k_{n}"),
        kek: "local:///k".into(),
        wrapped: vec![1],
        created_at: stateseal_testkit::instant(at),
        activate_at: stateseal_testkit::instant(at),
        retire_at: None,
        seals_reserved: 0,
    }
}

/// A document history: (true time of the write, document), built by rotating
/// at the given gaps (in units of one full rotation) from a rotator with a skewed clock.
fn history(timing: &Timing, gaps: &[(f64, f64, u8)], t0: f64) -> Vec<(f64, Keyset)> {
    let mut doc = Keyset {
        timing: None,
        rotation_claim: None,
        revocations: Vec::new(),
        id: "ks_p".into(),
        generation: 1,
        keys: vec![entry(0, t0)],
    };
    let mut out = vec![(t0, doc.clone())];
    let cycle = (timing.propagation + timing.retire_delay()).as_secs_f64();
    let mut t = t0;
    for (n, (gap, offset, mode)) in gaps.iter().enumerate() {
        t += gap * cycle;
        let now = t + offset * timing.max_skew.as_secs_f64();
        let mode = match mode % 8 {
            0 => RotateMode::Forced,
            _ => RotateMode::Scheduled,
        };
        // (Scheduled rotations while one is in flight are refused, and skipped here.)
        if let Ok(next) = rotated(&doc, entry(n + 1, now), now, timing, mode) {
            next.validate().expect("a rotated document is valid");
            doc = next;
            out.push((t, doc.clone()));
        }
    }
    out
}

fn view(history: &[(f64, Keyset)], t: f64) -> &Keyset {
    &history
        .iter()
        .rev()
        .find(|(w, _)| *w <= t)
        .unwrap_or(&history[0])
        .1
}

fn timing() -> impl Strategy<Value = Timing> {
    (1.0f64..60.0, 0.0f64..60.0, 10.0f64..1200.0).prop_map(|(r, s, t)| {
        Timing::new(
            Duration::from_secs_f64(r),
            Duration::from_secs_f64(s),
            Duration::from_secs_f64(t),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn ring_is_well_formed(timing in timing(), gaps in prop::collection::vec((0.05f64..2.5, -0.5f64..0.5, any::<u8>()), 1..8), probes in prop::collection::vec(0.0f64..1.0, 1..20)) {
        let t0 = 1_782_345_600.0;
        let h = history(&timing, &gaps, t0);
        let (_, last) = h.last().expect("history");
        let span = h.last().expect("h").0 - t0 + 3.0 * (timing.propagation + timing.retire_delay()).as_secs_f64();
        for p in probes {
            let t = t0 - timing.max_skew.as_secs_f64() + p * span;
            if let Some(plan) = ring_at(last, t) {
                prop_assert_eq!(&plan.ring[0], &plan.primary);
                let live: Vec<&KeyEntry> = last.keys.iter().filter(|e| unseals_at(e, t)).collect();
                prop_assert_eq!(plan.ring.len(), live.len());
                let primary = last.entry(&plan.primary).expect("primary in doc");
                prop_assert!(unseals_at(primary, t));
                let newest_active = live.iter().filter(|e| e.activate_at.as_secs_f64() <= t).map(|e| e.activate_at.as_secs_f64()).fold(f64::NEG_INFINITY, f64::max);
                if newest_active.is_finite() {
                    prop_assert_eq!(primary.activate_at.as_secs_f64(), newest_active);
                }
                let pending = live.iter().any(|e| e.activate_at > stateseal_testkit::instant(t));
                prop_assert_eq!(plan.phase == Phase::One, pending);
                // One live key that is not active yet (a keyset written by a
                // clock ahead of this one) seals, but is phase one, not three.
                prop_assert_eq!(plan.phase == Phase::Three, live.len() == 1 && !pending);
            } else {
                prop_assert!(last.keys.iter().all(|e| !unseals_at(e, t)));
            }
        }
    }

    /// Zero downtime: instance A (clock offset a, view up to 1.1 R stale) seals at
    /// tm; instance B (offset b, its own staleness) verifies at any tv within the
    /// TTL less the skew. B's ring always holds A's sealing key.
    #[test]
    fn every_sealed_state_opens_everywhere_for_its_ttl(
        timing in (1.0f64..60.0, 0.0f64..60.0, 10.0f64..1200.0).prop_map(|(r, s, t)| Timing::new(Duration::from_secs_f64(r), Duration::from_secs_f64(s), Duration::from_secs_f64(t))),
        // Gaps shorter than a rotation with mode 0 are forced rotations over one in flight.
        gaps in prop::collection::vec((0.05f64..2.5, -0.5f64..0.5, 0u8..4), 1..6),
        a in -0.5f64..0.5, b in -0.5f64..0.5, stale_a in 0.0f64..1.1, stale_b in 0.0f64..1.1,
        anchor in any::<prop::sample::Index>(), near in -0.2f64..1.2, delay in 0.0f64..1.0,
    ) {
        let t0 = 1_782_345_600.0;
        let h = history(&timing, &gaps, t0);
        let (s, r) = (timing.max_skew, timing.refresh_interval);
        // Seal near a rotation, where the phases change: from just before the
        // write to past the old key's retirement.
        let w = h[anchor.index(h.len())].0;
        let tm = w + near * (timing.propagation + timing.retire_delay()).as_secs_f64();
        let tv = tm + delay * timing.ttl.saturating_sub(s).as_secs_f64();
        let view_a = view(&h, tm - stale_a * r.as_secs_f64());
        let view_b = view(&h, tv - stale_b * r.as_secs_f64());
        let sealer = ring_at(view_a, tm + a * s.as_secs_f64()).expect("A has a ring").primary;
        let ring_b = ring_at(view_b, tv + b * s.as_secs_f64()).expect("B has a ring").ring;
        prop_assert!(ring_b.contains(&sealer), "B (ring {:?}) cannot open A's key {}", ring_b, sealer);
    }
}
