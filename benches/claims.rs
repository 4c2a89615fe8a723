//! Criterion bench: the verify op with the crate's claims reader (the literal
//! `Cursor` over the minted layout, falling back to the general parser) against
//! the same op with a serde-based reader of the same claims, in one run. Both
//! unseal with the same codec; only the reading and checking of the claims
//! differs. The serde reader is a measurement baseline, not a replacement: it
//! cannot read lone surrogates (which Python mints) and parses `v` loosely.
#![allow(missing_docs)]

use std::borrow::Cow;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde::Deserialize;
use stateseal::{
    AesGcmCodec, Envelope, KeyRing, MintOptions, OpenOptions, RequestIdentity, RingHandle, Secret,
    StateCodec, UnixTime,
};

const NOW: UnixTime = UnixTime::from_secs(1_782_345_600);

#[derive(Deserialize)]
struct Claims<'a> {
    v: u32,
    iat: f64,
    exp: f64,
    #[serde(borrow)]
    m: Cow<'a, str>,
    #[serde(borrow)]
    t: Cow<'a, str>,
    #[serde(borrow)]
    a: Cow<'a, str>,
    #[serde(borrow)]
    s: Cow<'a, str>,
    #[serde(borrow, default)]
    aud: Option<Cow<'a, str>>,
}

/// Unseal, then read and check the claims with serde_json.
fn verify_serde(
    codec: &AesGcmCodec,
    id: &RequestIdentity,
    audience: &str,
    token: &str,
) -> Option<String> {
    let payload = codec.unseal(token).ok()?;
    let c: Claims<'_> = serde_json::from_slice(&payload).ok()?;
    let now = NOW.as_secs_f64();
    let ok = c.v == 1
        && c.iat.is_finite()
        && c.iat <= now + 60.0
        && c.exp.is_finite()
        && now < c.exp
        && c.m == id.method()
        && c.t.as_bytes() == id.target().as_bytes()
        && c.a == id.args_digest()
        && c.aud.as_deref() == Some(audience);
    ok.then(|| c.s.into_owned())
}

fn bench(c: &mut Criterion) {
    let ring = Arc::new(RingHandle::new(
        KeyRing::from_secrets(&[Secret::new(vec![7; 32]).expect("key")]).expect("ring"),
    ));
    let codec = Arc::new(AesGcmCodec::new(ring.clone()));
    let envelope = Envelope::builder(ring, Some("bench"))
        .build()
        .expect("envelope");
    let id = RequestIdentity::from_json(
        "tools/call",
        br#"{"name":"deploy","arguments":{"env":"prod","replicas":3,"dry_run":false,"region":"eu-west-1","tag":"v1.2.3"}}"#,
    )
    .expect("identity");
    let mut g = c.benchmark_group("verify_claims_reader");
    for size in [64usize, 1024, 16 * 1024] {
        let state = "x".repeat(size);
        let token = envelope
            .mint(&id, state.as_bytes(), MintOptions::new().at(NOW))
            .expect("mint");
        // Both readers accept the token and return the same state.
        assert_eq!(
            envelope
                .open(&id, &token, OpenOptions::new().at(NOW))
                .expect("verify")
                .state
                .as_str(),
            Some(state.as_str())
        );
        assert_eq!(
            verify_serde(&codec, &id, "bench", &token).as_deref(),
            Some(state.as_str())
        );
        g.bench_with_input(BenchmarkId::new("cursor", size), &token, |b, t| {
            b.iter(|| {
                envelope
                    .open(&id, black_box(t), OpenOptions::new().at(NOW))
                    .map(|o| o.state)
                    .expect("verify")
            });
        });
        g.bench_with_input(BenchmarkId::new("serde", size), &token, |b, t| {
            b.iter(|| verify_serde(&codec, &id, "bench", black_box(t)).expect("verify"));
        });
        g.bench_with_input(BenchmarkId::new("unseal_only", size), &token, |b, t| {
            b.iter(|| codec.unseal(black_box(t)).expect("unseal"));
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
