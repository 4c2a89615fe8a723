//! Criterion bench: what revocations cost the verify op. A bound state is
//! verified with no entries, with 1,000 entries it was issued after (the
//! common case: one comparison), with 1,000 entries it was issued before but
//! none selects it (client-id lookup and the principal's digest), and
//! revoked (refused last, after every other check). `no_check` verifies the
//! same token through a codec that forwards everything but `revoked` (the
//! trait's default: no ring load): the cost of the check itself, measured in
//! the same run under the same load.
#![allow(missing_docs)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use stateseal::{
    AesGcmCodec, Envelope, Error, KeyRing, Principal, RequestIdentity, Revocation, RevocationList,
    RingHandle, Secret, StateCodec,
};

const NOW: f64 = 1_782_345_600.0;

fn ring(entries: &[Revocation]) -> KeyRing {
    KeyRing::from_secrets(&[Secret::new(vec![7; 32]).expect("key")])
        .expect("ring")
        .with_revocations(RevocationList::new(entries))
}

/// The built-in codec without the revocation check.
#[derive(Debug)]
struct NoCheck(AesGcmCodec);

impl StateCodec for NoCheck {
    fn seal(&self, payload: &[u8]) -> Result<String, Error> {
        self.0.seal(payload)
    }
    fn unseal(&self, token: &str) -> Result<Vec<u8>, Error> {
        self.0.unseal(token)
    }
    fn unseal_in_place(&self, token: &str) -> Result<(Vec<u8>, std::ops::Range<usize>), Error> {
        self.0.unseal_in_place(token)
    }
}

fn bench(c: &mut Criterion) {
    let handle = Arc::new(RingHandle::new(ring(&[])));
    let envelope = Envelope::builder(Arc::new(AesGcmCodec::new(handle.clone())), Some("bench"))
        .build()
        .expect("envelope");
    let id = RequestIdentity::from_json("tools/call", br#"{"name":"deploy","arguments":{}}"#)
        .expect("identity");
    let alice = Principal::from_components("app-1", Some("https://as.example"), Some("alice"));
    let token = envelope
        .mint_at(&id, b"step-2", Some(&alice), NOW)
        .expect("mint");
    // Half principal entries, half client ids, none selecting alice.
    let others = |before: f64| -> Vec<Revocation> {
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
        ("1000_issued_after", others(NOW - 1.0), true),
        ("1000_issued_before_not_selected", others(NOW + 1.0), true),
        (
            "revoked",
            vec![Revocation::principal(&alice, NOW + 1.0)],
            false,
        ),
    ];
    let mut g = c.benchmark_group("verify_revocations");
    let unchecked = Envelope::builder(
        Arc::new(NoCheck(AesGcmCodec::new(handle.clone()))),
        Some("bench"),
    )
    .build()
    .expect("envelope");
    g.bench_function("no_check", |b| {
        b.iter(|| {
            unchecked
                .verify_at(&id, black_box(&token), Some(&alice), NOW)
                .is_ok()
        });
    });
    for (name, entries, verifies) in cases {
        handle.store(ring(&entries));
        let got = envelope.verify_at(&id, &token, Some(&alice), NOW);
        assert_eq!(got.is_ok(), verifies, "{name}");
        g.bench_function(name, |b| {
            b.iter(|| {
                envelope
                    .verify_at(&id, black_box(&token), Some(&alice), NOW)
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
