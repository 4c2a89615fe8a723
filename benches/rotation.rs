//! Rotation on the hot path: seal+unseal while the ring is swapped every
//! millisecond, against a static ring, in the same run; and the KMS call
//! counter across one million steady-state requests.
#![allow(missing_docs)]

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use stateseal::rotation::{SchedulerConfig, Timing, init_keyset};
use stateseal::{
    AesGcmCodec, FileStore, KeyRing, KeysetStore, LocalProvider, ManualClock, ProviderRegistry,
    RingHandle, RotationScheduler, Secret, StateCodec, UnixTime,
};

fn swap(c: &mut Criterion) {
    let a = Secret::new(vec![1; 32]).expect("a");
    let b = Secret::new(vec![2; 32]).expect("b");
    let payload = vec![b'x'; 1024];
    let mut g = c.benchmark_group("seal_unseal_1KiB");
    let handle = Arc::new(RingHandle::new(
        KeyRing::from_secrets(&[a.clone(), b.clone()]).expect("ring"),
    ));
    let codec = AesGcmCodec::new(handle.clone());
    g.bench_function("static_ring", |bench| {
        bench.iter(|| {
            codec
                .unseal(&codec.seal(black_box(&payload)).expect("seal"))
                .expect("open")
        })
    });
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (handle, stop) = (handle.clone(), stop.clone());
        let (a, b) = (a.clone(), b.clone());
        std::thread::spawn(move || {
            let rings = [
                KeyRing::from_secrets(&[a.clone(), b.clone()]),
                KeyRing::from_secrets(&[b, a]),
            ];
            let mut n = 0usize;
            while !stop.load(Ordering::Relaxed) {
                // [a, b] and [b, a] alternate: both keys always unseal, the primary flips.
                if let Ok(ring) = &rings[n % 2] {
                    handle.store(KeyRing::from_keys(ring.keys().cloned().collect()).expect("ring"));
                }
                n += 1;
                std::thread::sleep(Duration::from_millis(1));
            }
            n
        })
    };
    g.bench_function("ring_swapped_every_ms", |bench| {
        bench.iter(|| {
            codec
                .unseal(&codec.seal(black_box(&payload)).expect("seal"))
                .expect("open")
        })
    });
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().expect("swapper");
    eprintln!("ring swaps during the run: {swaps}");
    g.finish();
}

fn steady_state_kms_calls(_: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("rt");
    let dir = std::env::temp_dir().join(format!("stateseal-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let kek = dir.join("kek.bin");
    LocalProvider::create_kek(&kek).expect("kek");
    let store: Arc<dyn KeysetStore> = Arc::new(FileStore::new(dir.join("keyset.json")));
    let mut registry = ProviderRegistry::with_defaults();
    registry.allow_local_kek();
    let t0 = UnixTime::from_secs(1_782_345_600);
    let ring = Arc::new(RingHandle::empty());
    let sched = rt.block_on(async {
        init_keyset(
            store.as_ref(),
            &registry,
            &format!("local://{}", kek.display()),
            Timing::default(),
            t0,
        )
        .await
        .expect("init");
        let sched = RotationScheduler::new(
            SchedulerConfig::default(),
            store,
            registry,
            ring.clone(),
            Arc::new(ManualClock::new(t0)),
        )
        .expect("scheduler");
        sched.refresh_at(t0).await.expect("refresh");
        sched
    });
    let codec = AesGcmCodec::new(ring);
    let before = sched.kms_calls();
    for i in 0..1_000_000u32 {
        let token = codec.seal(black_box(b"state")).expect("seal");
        black_box(codec.unseal(&token).expect("open"));
        if i % 100_000 == 0 {
            rt.block_on(sched.refresh_at(t0 + Duration::from_secs_f64(f64::from(i) / 1e5)))
                .expect("refresh");
        }
    }
    let calls = sched.kms_calls() - before;
    eprintln!(
        "KMS calls across 1,000,000 steady-state seal+unseal requests (and 10 refreshes): {calls}"
    );
    assert_eq!(calls, 0);
    let _ = std::fs::remove_dir_all(dir);
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3)).sample_size(40);
    targets = swap, steady_state_kms_calls
}
criterion_main!(benches);
