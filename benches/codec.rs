//! Criterion benches: codec seal/unseal and envelope mint/verify at 64 B, 1 KiB
//! and 16 KiB, beside the raw floor (OS nonce + AES-256-GCM + base64url) in
//! the same run, so the overhead reads as a ratio; and AES-256-GCM alone from
//! aws-lc against ring (`aead_seal`).
#![allow(missing_docs)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use stateseal::{
    AesGcmCodec, Envelope, KeyRing, MintOptions, OpenOptions, RequestIdentity, RingHandle, Secret,
    StateCodec,
};

const SIZES: [usize; 3] = [64, 1024, 16 * 1024];

fn setup() -> (Arc<AesGcmCodec>, Envelope, RequestIdentity) {
    let ring = Arc::new(RingHandle::new(
        KeyRing::from_secrets(&[Secret::generate().expect("rng")]).expect("ring"),
    ));
    let codec = Arc::new(AesGcmCodec::new(ring.clone()));
    let envelope = Envelope::builder(ring, Some("bench"))
        .build()
        .expect("envelope");
    let params = serde_json::json!({
        "name": "deploy",
        "arguments": {"env": "prod", "region": "eu-west-1", "replicas": 3, "dry_run": false, "ratio": 0.25}
    });
    let id = RequestIdentity::from_serde("tools/call", &params).expect("identity");
    (codec, envelope, id)
}

fn bench(c: &mut Criterion) {
    let (codec, envelope, id) = setup();
    let key = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &[7; 32]).expect("key"));
    let mut g = c.benchmark_group("seal");
    for size in SIZES {
        let payload = vec![b'x'; size];
        let state = "x".repeat(size);
        g.throughput(Throughput::Bytes(size as u64));
        g.bench_with_input(BenchmarkId::new("raw_aead_b64", size), &payload, |b, p| {
            b.iter(|| {
                let mut nonce = [0u8; 12];
                getrandom::fill(&mut nonce).expect("rng");
                let mut buf = p.clone();
                key.seal_in_place_append_tag(
                    Nonce::assume_unique_for_key(nonce),
                    Aad::from(b"v1.kid!"),
                    &mut buf,
                )
                .expect("seal");
                black_box(base64_turbo::URL_SAFE_NO_PAD.encode(&buf))
            })
        });
        g.bench_with_input(BenchmarkId::new("codec", size), &payload, |b, p| {
            b.iter(|| codec.seal(black_box(p)))
        });
        g.bench_with_input(BenchmarkId::new("envelope_mint", size), &state, |b, s| {
            b.iter(|| envelope.mint(&id, black_box(s), MintOptions::new()))
        });
    }
    g.finish();
    let mut g = c.benchmark_group("open");
    for size in SIZES {
        let payload = vec![b'x'; size];
        let mut sealed = payload.clone();
        key.seal_in_place_append_tag(
            Nonce::assume_unique_for_key([1; 12]),
            Aad::from(b"v1.kid!"),
            &mut sealed,
        )
        .expect("seal");
        let sealed = base64_turbo::URL_SAFE_NO_PAD.encode(&sealed);
        let token = codec.seal(&payload).expect("seal");
        let minted = envelope
            .mint(&id, "x".repeat(size), MintOptions::new())
            .expect("mint");
        g.throughput(Throughput::Bytes(size as u64));
        g.bench_with_input(BenchmarkId::new("raw_aead_b64", size), &sealed, |b, t| {
            b.iter(|| {
                let mut buf = base64_turbo::URL_SAFE_NO_PAD
                    .decode(black_box(t))
                    .expect("b64");
                black_box(
                    key.open_in_place(
                        Nonce::assume_unique_for_key([1; 12]),
                        Aad::from(b"v1.kid!"),
                        &mut buf,
                    )
                    .is_ok(),
                )
            })
        });
        g.bench_with_input(BenchmarkId::new("codec", size), &token, |b, t| {
            b.iter(|| codec.unseal(black_box(t)))
        });
        g.bench_with_input(
            BenchmarkId::new("envelope_verify", size),
            &minted,
            |b, t| {
                b.iter(|| {
                    envelope
                        .open(&id, black_box(t), OpenOptions::new())
                        .map(|o| o.state)
                })
            },
        );
    }
    g.finish();
}

/// AES-256-GCM alone, aws-lc (what the codec uses) against ring (what it used
/// before), in place, fixed nonce: the choice of library, measured in one run.
fn aead(c: &mut Criterion) {
    let aws = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &[7; 32]).expect("key"));
    let ring_key = ring::aead::LessSafeKey::new(
        ring::aead::UnboundKey::new(&ring::aead::AES_256_GCM, &[7; 32]).expect("key"),
    );
    let mut g = c.benchmark_group("aead_seal");
    for size in SIZES {
        let mut buf = vec![b'x'; size];
        g.throughput(Throughput::Bytes(size as u64));
        g.bench_function(BenchmarkId::new("aws_lc", size), |b| {
            b.iter(|| {
                aws.seal_in_place_separate_tag(
                    Nonce::assume_unique_for_key([1; 12]),
                    Aad::from(b"v1.kid!"),
                    black_box(&mut buf),
                )
                .map(|tag| black_box(tag.as_ref()[0]))
            })
        });
        g.bench_function(BenchmarkId::new("ring", size), |b| {
            b.iter(|| {
                ring_key
                    .seal_in_place_separate_tag(
                        ring::aead::Nonce::assume_unique_for_key([1; 12]),
                        ring::aead::Aad::from(b"v1.kid!"),
                        black_box(&mut buf),
                    )
                    .map(|tag| black_box(tag.as_ref()[0]))
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(1)).sample_size(30);
    targets = bench, aead
}
criterion_main!(benches);
