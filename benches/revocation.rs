//! Criterion bench: what revocations cost the verify op. A bound state is
//! verified with no entries, with 1,000 entries it was issued after (the
//! common case: one comparison), with 1,000 entries it was issued before but
//! none selects it (client-id lookup and the principal's digest), and
//! revoked (refused last, after every other check). `no_check` verifies the
//! same token through an envelope over a second ring with the same key and no
//! revocations: the cost of the check itself, measured in the same run under
//! the same load.
#![allow(missing_docs)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use stateseal::{
    Envelope, KeyRing, MintOptions, OpenOptions, Principal, RequestIdentity, Revocation,
    RevocationList, RingHandle, Secret, UnixTime,
};

const NOW: UnixTime = UnixTime::from_secs(1_782_345_600);
const SECOND: Duration = Duration::from_secs(1);

fn keys() -> KeyRing {
    KeyRing::from_secrets(&[Secret::new(vec![7; 32]).expect("key")]).expect("ring")
}

fn ring(entries: &[Revocation]) -> KeyRing {
    keys().with_revocations(RevocationList::new(entries))
}

fn bench(c: &mut Criterion) {
    let handle = Arc::new(RingHandle::new(ring(&[])));
    let envelope = Envelope::builder(handle.clone(), Some("bench"))
        .build()
        .expect("envelope");
    let id = RequestIdentity::from_json("tools/call", br#"{"name":"deploy","arguments":{}}"#)
        .expect("identity");
    let alice = Principal::from_components("app-1", Some("https://as.example"), Some("alice"));
    let token = envelope
        .mint(&id, b"step-2", MintOptions::new().principal(&alice).at(NOW))
        .expect("mint");
    // Half principal entries, half client ids, none selecting alice.
    let others = |before: UnixTime| -> Vec<Revocation> {
        (0..1000)
            .map(|i| {
                if i % 2 == 0 {
                    let p = Principal::from_components("app-9", None, Some(&format!("user-{i}")));
                    Revocation::principal(&p, before)
                } else {
                    Revocation::client_id(&format!("client-{i}"), before)
                }
            })
            .collect()
    };
    let cases = [
        ("none", Vec::new(), true),
        ("1000_issued_after", others(NOW - SECOND), true),
        (
            "1000_issued_before_not_selected",
            others(NOW + SECOND),
            true,
        ),
        (
            "revoked",
            vec![Revocation::principal(&alice, NOW + SECOND)],
            false,
        ),
    ];
    let mut g = c.benchmark_group("verify_revocations");
    // The same key, no revocations: the envelope has nothing to look up.
    let unchecked = Envelope::builder(Arc::new(RingHandle::new(keys())), Some("bench"))
        .build()
        .expect("envelope");
    g.bench_function("no_check", |b| {
        b.iter(|| {
            unchecked
                .open(
                    &id,
                    black_box(&token),
                    OpenOptions::new().principal(&alice).at(NOW),
                )
                .is_ok()
        });
    });
    for (name, entries, verifies) in cases {
        handle.store(ring(&entries));
        let got = envelope.open(&id, &token, OpenOptions::new().principal(&alice).at(NOW));
        assert_eq!(got.is_ok(), verifies, "{name}");
        g.bench_function(name, |b| {
            b.iter(|| {
                envelope
                    .open(
                        &id,
                        black_box(&token),
                        OpenOptions::new().principal(&alice).at(NOW),
                    )
                    .is_ok()
            });
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).sample_size(30);
    targets = bench
}
criterion_main!(benches);
