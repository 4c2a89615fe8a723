use super::*;
use crate::keyset::KeyEntry;
use std::time::Duration;

fn doc(id: &str, generation: u64, activate_at: f64) -> Keyset {
    Keyset {
        id: id.into(),
        generation,
        keys: vec![KeyEntry {
            entry: "k_1".into(),
            kek: "local:///k".into(),
            wrapped: vec![1],
            created_at: UnixTime::from_secs(1),
            activate_at: UnixTime::from_finite_secs(activate_at),
            retire_at: None,
            seals_reserved: 0,
            kid: None,
            alg: crate::key::TokenFormat::V1,
        }],
        timing: Some(crate::keyset::Timing::new(
            Duration::from_secs(30),
            Duration::from_secs(60),
            Duration::from_secs(600),
        )),
        rotation_claim: None,
        revocations: Vec::new(),
    }
}

fn cfg(ttl: f64) -> Timing {
    Timing::new(
        Duration::from_secs(30),
        Duration::from_secs(60),
        Duration::from_secs_f64(ttl),
    )
}

fn none() -> BTreeSet<String> {
    BTreeSet::new()
}

#[test]
fn entries_only_move_the_way_legitimate_writes_move_them() {
    let now = 1000.0;
    let mut adopted = doc("ks_a", 5, 900.0);
    adopted.keys[0].kid = crate::key::KeyId::from_hex("0a0b0c0d");
    adopted.keys[0].retire_at = Some(UnixTime::from_secs(5000));
    adopted.keys[0].seals_reserved = 10;
    let next = |f: &dyn Fn(&mut KeyEntry)| {
        let mut d = adopted.clone();
        d.generation = 6;
        f(&mut d.keys[0]);
        d
    };
    let reason = |d: Keyset, pruned: &BTreeSet<String>| {
        admit(Some(&adopted), &d, &cfg(600.0), now, pruned)
            .err()
            .map(|(r, _)| r)
    };
    // Legitimate: earlier activation (a --now rotation), earlier retirement, more reservations, a re-wrap.
    assert_eq!(
        reason(
            next(&|e| e.activate_at = UnixTime::from_finite_secs(950.0 - 100.0)),
            &none()
        ),
        None
    );
    assert_eq!(
        reason(
            next(&|e| e.retire_at = Some(UnixTime::from_secs(4000))),
            &none()
        ),
        None
    );
    assert_eq!(reason(next(&|e| e.seals_reserved = 11), &none()), None);
    assert_eq!(reason(next(&|e| e.wrapped = vec![9, 9]), &none()), None);
    // (c) freeze rotation, every way a store writer could try it.
    assert_eq!(
        reason(next(&|e| e.activate_at = UnixTime::from_secs(901)), &none()),
        Some(KeysetRefusal::ActivationDelayed)
    );
    assert_eq!(
        reason(next(&|e| e.retire_at = None), &none()),
        Some(KeysetRefusal::RetirementDelayed)
    );
    assert_eq!(
        reason(
            next(&|e| e.retire_at = Some(UnixTime::from_secs(5001))),
            &none()
        ),
        Some(KeysetRefusal::RetirementDelayed)
    );
    assert_eq!(
        reason(next(&|e| e.seals_reserved = 9), &none()),
        Some(KeysetRefusal::ReservationsDecreased)
    );
    assert_eq!(
        reason(
            next(&|e| e.kid = crate::key::KeyId::from_hex("0a0b0c0e")),
            &none()
        ),
        Some(KeysetRefusal::KeyChanged)
    );
    let mut far = adopted.clone();
    far.generation = 6;
    let mut e = far.keys[0].clone();
    e.entry = "k_2".into();
    e.activate_at = crate::keyset::MAX_TIME;
    e.retire_at = None;
    far.keys.push(e);
    assert_eq!(
        reason(far.clone(), &none()),
        Some(KeysetRefusal::ActivationTooFar)
    );
    // Also for an instance that adopts it first.
    assert_eq!(
        admit(None, &far, &cfg(600.0), now, &none()).unwrap_err().0,
        KeysetRefusal::ActivationTooFar
    );
    // P + S ahead is a legitimate scheduled rotation seen on a clock S behind.
    far.keys[1].activate_at = UnixTime::from_finite_secs(now + 120.0 + 60.0);
    assert_eq!(reason(far.clone(), &none()), None);
    far.keys[1].activate_at = UnixTime::from_finite_secs(now + 120.0 + 60.0 + 1.0);
    assert_eq!(reason(far, &none()), Some(KeysetRefusal::ActivationTooFar));
    let pruned: BTreeSet<String> = ["k_1".to_owned()].into();
    assert_eq!(
        reason(next(&|_| {}), &pruned),
        Some(KeysetRefusal::PrunedReturned)
    );
}

#[test]
fn refuses_older_foreign_and_rewritten_documents() {
    let adopted = doc("ks_a", 5, 1.0);
    assert!(admit(None, &doc("ks_b", 1, 1.0), &cfg(600.0), 1.0, &none()).is_ok());
    assert!(
        admit(
            Some(&adopted),
            &doc("ks_a", 5, 1.0),
            &cfg(600.0),
            1.0,
            &none()
        )
        .is_ok()
    );
    assert!(
        admit(
            Some(&adopted),
            &doc("ks_a", 6, 0.5),
            &cfg(600.0),
            1.0,
            &none()
        )
        .is_ok()
    );
    let reason = |d: Keyset| {
        admit(Some(&adopted), &d, &cfg(600.0), 1.0, &none())
            .unwrap_err()
            .0
    };
    assert_eq!(reason(doc("ks_a", 4, 1.0)), KeysetRefusal::Rollback);
    assert_eq!(reason(doc("ks_a", 5, 0.5)), KeysetRefusal::Rewritten);
    assert_eq!(reason(doc("ks_b", 9, 1.0)), KeysetRefusal::OtherKeyset);
}

#[test]
fn refuses_a_profile_shorter_than_the_configured_ttl() {
    let (refusal, detail) =
        admit(None, &doc("ks_a", 1, 1.0), &cfg(900.0), 1.0, &none()).unwrap_err();
    assert_eq!(refusal, KeysetRefusal::Timing);
    assert!(
        detail.contains("900s") && detail.contains("600s"),
        "{detail}"
    );
    let mut old = doc("ks_a", 1, 1.0);
    old.timing = None;
    assert!(
        admit(None, &old, &cfg(900.0), 1.0, &none()).is_ok(),
        "documents without a profile keep today's rules"
    );
}
