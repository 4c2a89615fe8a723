//! The metrics of DESIGN.md "Observability" are emitted, with reasons as labels.

use std::sync::Arc;

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use stateseal::rotation::{RotateMode, SchedulerConfig, Timing};
use stateseal::{
    Envelope, ManualClock, MintOptions, OpenOptions, RequestIdentity, RingHandle,
    RotationScheduler, UnixTime,
};

use crate::fleet::{local_keyset, local_registry};
use crate::recorded::{block_on_recorded, values};
use stateseal_testkit::instant;

#[test]
fn counters_and_gauges_are_recorded() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    block_on_recorded(&recorder, || async {
        let registry = local_registry();
        let t0 = 1_782_345_600.0;
        let (dir, store) = local_keyset("metrics", &registry, Timing::default(), t0).await;
        let ring = Arc::new(RingHandle::empty());
        let sched = RotationScheduler::new(
            SchedulerConfig::default(),
            store,
            registry,
            ring.clone(),
            Arc::new(ManualClock::new(
                UnixTime::from_secs_f64(t0).expect("a finite time"),
            )),
        )
        .expect("scheduler");
        sched.refresh_at(instant(t0 + 5.0)).await.expect("refresh");
        let env = Envelope::builder(ring, Some("svc")).build().expect("env");
        let id = RequestIdentity::from_json("tools/call", br#"{"name":"t"}"#).expect("id");
        let other = RequestIdentity::from_json("tools/call", br#"{"name":"u"}"#).expect("id");
        let token = env
            .mint(
                &id,
                b"s",
                MintOptions::new().at(UnixTime::from_secs_f64(t0 + 5.0).expect("a finite time")),
            )
            .expect("mint");
        env.open(
            &id,
            &token,
            OpenOptions::new().at(UnixTime::from_secs_f64(t0 + 6.0).expect("a finite time")),
        )
        .map(|o| o.state)
        .expect("verify");
        assert!(
            env.open(
                &other,
                &token,
                OpenOptions::new().at(UnixTime::from_secs_f64(t0 + 6.0).expect("a finite time"))
            )
            .map(|o| o.state)
            .is_err()
        );
        assert!(
            env.open(
                &id,
                "v1.garbage",
                OpenOptions::new().at(UnixTime::from_secs_f64(t0 + 6.0).expect("a finite time"))
            )
            .map(|o| o.state)
            .is_err()
        );
        let _ = std::fs::remove_dir_all(dir);
    });
    let snapshot = snapshotter.snapshot().into_vec();
    let find = |name: &str, label: Option<(&str, &str)>| {
        snapshot
            .iter()
            .find(|(key, ..)| {
                key.key().name() == name
                    && label.is_none_or(|(k, v)| {
                        key.key().labels().any(|l| l.key() == k && l.value() == v)
                    })
            })
            .map(|(_, _, _, value)| value)
    };
    assert_eq!(
        find("stateseal_seals_total", None),
        Some(&DebugValue::Counter(1))
    );
    assert_eq!(
        find("stateseal_unseals_total", None),
        Some(&DebugValue::Counter(1))
    );
    assert_eq!(
        find(
            "stateseal_rejections_total",
            Some(("reason", "request binding"))
        ),
        Some(&DebugValue::Counter(1))
    );
    assert_eq!(
        find("stateseal_rejections_total", Some(("reason", "malformed"))),
        Some(&DebugValue::Counter(1))
    );
    assert_eq!(
        find("stateseal_kms_calls_total", Some(("outcome", "ok"))),
        Some(&DebugValue::Counter(1))
    );
    for gauge in [
        "stateseal_ring_generation",
        "stateseal_rotation_phase",
        "stateseal_primary_key_age_seconds",
        "stateseal_seconds_since_refresh",
    ] {
        assert!(
            matches!(find(gauge, None), Some(DebugValue::Gauge(_))),
            "{gauge} missing"
        );
    }
    assert!(
        matches!(find("stateseal_primary_key_age_seconds", None), Some(DebugValue::Gauge(v)) if v.into_inner() == 5.0)
    );
}

/// What an operator's dashboards and alerts read off one instance: ready, the
/// seconds left in the current phase, and the seal limit the primary counts against.
#[test]
fn readiness_phase_deadline_and_seal_limit_gauges() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    // A snapshot drains the recorder: read every gauge at once.
    let gauges = || values(&snapshotter);
    let t0 = 1_782_345_600.0;
    let timing = Timing::default();
    let (steady, rotating) = block_on_recorded(&recorder, || async {
        let registry = local_registry();
        let (dir, store) = local_keyset("phase-gauges", &registry, timing, t0).await;
        let sched = RotationScheduler::new(
            SchedulerConfig::default(),
            store,
            registry,
            Arc::new(RingHandle::empty()),
            Arc::new(ManualClock::new(
                UnixTime::from_secs_f64(t0).expect("a finite time"),
            )),
        )
        .expect("scheduler");
        sched.refresh_at(instant(t0 + 5.0)).await.expect("refresh");
        let steady = gauges();
        sched
            .rotate_at(instant(t0 + 100.0), RotateMode::Scheduled)
            .await
            .expect("rotate");
        sched
            .refresh_at(instant(t0 + 110.0))
            .await
            .expect("refresh");
        let rotating = gauges();
        let _ = std::fs::remove_dir_all(dir);
        (steady, rotating)
    });
    // Steady state: ready, phase 3, nothing scheduled.
    assert_eq!(steady["stateseal_ready"], 1.0);
    assert_eq!(steady["stateseal_rotation_phase"], 3.0);
    assert_eq!(steady["stateseal_seconds_to_next_phase"], 0.0);
    assert_eq!(
        steady["stateseal_max_seals_per_key"],
        SchedulerConfig::default().max_seals_per_key as f64
    );
    // Ten seconds into a rotation: phase 1 ends when the new key activates, P after it.
    assert_eq!(rotating["stateseal_rotation_phase"], 1.0);
    assert_eq!(
        rotating["stateseal_seconds_to_next_phase"],
        timing.propagation.as_secs_f64() - 10.0
    );
}
