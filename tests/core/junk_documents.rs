//! What one store write of junk costs the fleet: a document whose MAC key
//! reference names the pinned KEK but whose wrapped key was replaced (no KEK
//! needed to write it) is refused after one KMS call per instance, not one per
//! refresh, however often it is rewritten with the same reference (and asked
//! about again only after a hold, so a misclassified KMS error locks nothing out).

use std::sync::Arc;

use stateseal::rotation::{SchedulerConfig, Timing};
use stateseal_contract::integrity::CountingLocal;
use stateseal_testkit::instant;

use crate::fleet::{local_keyset, local_registry};

const T0: f64 = 1_782_345_600.0;

/// `good` with one character of its MAC key's wrapped form changed (same
/// length, still base64): a reference the KMS refuses.
fn junk(good: &[u8], at: usize) -> Vec<u8> {
    let mut v: serde_json::Value = serde_json::from_slice(good).expect("envelope");
    let wrapped = v["mac"]["wrapped"]
        .as_str()
        .expect("mac.wrapped")
        .to_owned();
    let mut chars: Vec<char> = wrapped.chars().collect();
    chars[at] = if chars[at] == 'A' { 'B' } else { 'A' };
    v["mac"]["wrapped"] = serde_json::Value::String(chars.into_iter().collect());
    serde_json::to_vec(&v).expect("json")
}

#[tokio::test]
async fn a_junk_document_costs_one_kms_call_not_one_per_refresh() {
    let kms = Arc::new(CountingLocal::default());
    let mut registry = local_registry();
    registry.register_provider(kms.clone());
    let (dir, store) = local_keyset("junk-doc", &registry, Timing::default(), T0).await;
    let path = dir.join("keyset.json");
    let good = std::fs::read(&path).expect("document");
    let config = SchedulerConfig::builder()
        .rotation_period(None)
        .renew_keyset(false)
        .build()
        .expect("config");
    let a = stateseal_testkit::member::instance(
        config,
        store,
        &registry,
        stateseal_testkit::instant(T0),
    );
    a.refresh_at(instant(T0)).await.expect("adopted");
    let before = kms.unwraps();
    let mut t = T0;
    let mut refresh_n = |n: usize| {
        let a = a.clone();
        let start = t;
        t += 5.0 * n as f64;
        async move {
            for i in 1..=n {
                let err = a
                    .refresh_at(instant(start + 5.0 * i as f64))
                    .await
                    .expect_err("junk refused");
                assert!(
                    matches!(
                        &err,
                        stateseal::Error::Keyset(stateseal::KeysetError::Refused {
                            reason: stateseal::KeysetRefusal::Mac,
                            ..
                        })
                    ),
                    "{err}"
                );
                assert!(a.is_ready(), "the last authentic document still serves");
            }
        }
    };
    std::fs::write(&path, junk(&good, 8)).expect("junk");
    refresh_n(10).await;
    assert_eq!(
        kms.unwraps() - before,
        1,
        "one KMS call for one junk document"
    );
    // Written again with the same junk reference (another store version): no call.
    let mut again = junk(&good, 8);
    again.push(b'\n');
    std::fs::write(&path, again).expect("junk again");
    refresh_n(5).await;
    assert_eq!(
        kms.unwraps() - before,
        1,
        "the refused reference is remembered"
    );
    // Another junk reference: one more call.
    std::fs::write(&path, junk(&good, 12)).expect("other junk");
    refresh_n(5).await;
    assert_eq!(kms.unwraps() - before, 2);
    // A refusal is held for a while, not for good (a misclassified KMS error
    // must not lock an instance out): five minutes on, the KMS is asked again.
    let _ = a.refresh_at(instant(t + 301.0)).await;
    assert_eq!(kms.unwraps() - before, 3, "asked again after the hold");
    t += 301.0;
    // The authentic document back: adopted under the cached MAC key, no call.
    std::fs::write(&path, &good).expect("restore");
    a.refresh_at(instant(t + 5.0)).await.expect("adopted again");
    assert_eq!(kms.unwraps() - before, 3);
    let _ = std::fs::remove_dir_all(dir);
}
