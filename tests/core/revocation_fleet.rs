//! A revocation written while a fleet serves: every instance, refreshing on
//! the jittered schedule servers keep, refuses the covered states from its
//! first refresh after the write (within R), and nothing else is refused.

use stateseal::rotation::{RefreshPacing, Timing, revoke};
use stateseal::{RejectReason, Revocation};
use stateseal_testkit::member::Member;

use crate::fleet::{local_keyset, local_registry};
use crate::revocation::{T0, alice, bob, mint, refusal, trust};
/// Five instances on the jittered refresh schedule servers keep, verifying
/// states every half second while a revocation is written: each refuses the
/// covered states from its first refresh after the write, which comes within
/// R, and nothing else is ever refused.
#[tokio::test]
async fn a_revocation_during_live_traffic_reaches_every_instance_within_r() {
    let registry = local_registry();
    let (dir, store) = local_keyset("revoke-fleet", &registry, Timing::default(), T0).await;
    let timing = Timing::default();
    let pacing = RefreshPacing::new(&timing, 0.1);
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut unit = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut fleet = Vec::new();
    for _ in 0..5 {
        let m = Member::new(&registry, store.clone(), T0);
        m.sched.refresh_at(T0).await.expect("refresh");
        let next = T0 + pacing.first(unit());
        fleet.push((m, next, None::<f64>));
    }
    let (a, b) = (alice(), bob());
    let written_at = T0 + 45.0;
    let old_a = mint(&fleet[0].0, Some(&a), T0 + 10.0);
    let old_b = mint(&fleet[1].0, Some(&b), T0 + 10.0);
    let new_a = mint(&fleet[2].0, Some(&a), written_at + 1.0);
    let mut t = T0;
    while t < T0 + 120.0 {
        t += 0.5;
        if t == written_at {
            revoke(
                &*store,
                &registry,
                &trust(),
                Revocation::principal(&a, t),
                t,
            )
            .await
            .expect("revoke");
        }
        for (m, next, refused_from) in &mut fleet {
            if t >= *next {
                m.sched.refresh_at(t).await.expect("refresh");
                *next = t + pacing.after_success(unit());
            }
            assert_eq!(refusal(m, &old_b, Some(&b), t), None, "another principal");
            if t > written_at + 1.0 {
                assert_eq!(refusal(m, &new_a, Some(&a), t), None, "issued after before");
            }
            let refused = refusal(m, &old_a, Some(&a), t) == Some(RejectReason::Revoked);
            match refused_from {
                Some(_) => assert!(refused, "an instance forgot the revocation at {t}"),
                None if refused => *refused_from = Some(t),
                None => {}
            }
        }
    }
    for (_, _, refused_from) in &fleet {
        let from = refused_from.expect("every instance refuses");
        assert!(from > written_at, "refused before the write");
        assert!(
            from - written_at <= timing.refresh_interval,
            "{}s after the write, more than R",
            from - written_at
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}
