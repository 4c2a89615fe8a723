//! What authenticating the keyset costs: verifying a stored document (its
//! tag, once the MAC key is cached, and the payload parse) against reading an
//! unauthenticated one, per refresh and per write, at two entries (a
//! rotation) and 64 (the cap), in the same run.
#![allow(missing_docs)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use stateseal::rotation::{
    KeysetTrust, SchedulerConfig, Timing, TrustPolicy, init_keyset, load_verified,
};
use stateseal::{
    FileStore, KeyEntry, Keyset, KeysetStore, LocalProvider, ManualClock, ProviderRegistry,
    RingHandle, RotationScheduler, StoredKeyset,
};

use stateseal_testkit::instant;

const T0: f64 = 1_782_345_600.0;

struct Fixture {
    rt: tokio::runtime::Runtime,
    registry: ProviderRegistry,
    dir: std::path::PathBuf,
}

impl Fixture {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("stateseal-bench-ks-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        LocalProvider::create_kek(dir.join("kek.bin")).expect("kek");
        let mut registry = ProviderRegistry::with_defaults();
        registry.allow_local_kek();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("rt");
        Self { rt, registry, dir }
    }

    /// An authenticated document with `entries` entries (retired copies of the first key).
    fn stored(&self, entries: usize, name: &str) -> (Arc<dyn KeysetStore>, StoredKeyset) {
        let store: Arc<dyn KeysetStore> = Arc::new(FileStore::new(self.dir.join(name)));
        let kek = format!("local://{}", self.dir.join("kek.bin").display());
        self.rt.block_on(async {
            init_keyset(
                &*store,
                &self.registry,
                &kek,
                Timing::default(),
                instant(T0),
            )
            .await
            .expect("init");
            let trust = KeysetTrust::new(TrustPolicy::default());
            let v = load_verified(&*store, &self.registry, &trust, instant(T0))
                .await
                .expect("verified");
            let mut next: Keyset = v.doc.clone();
            let first: KeyEntry = next.keys[0].clone();
            for i in 1..entries {
                let mut e = first.clone();
                e.entry = format!("k_{i:024}");
                e.activate_at = stateseal_testkit::instant(T0 - 10.0 * i as f64);
                e.retire_at = Some(stateseal_testkit::instant(T0 - 1.0));
                next.keys.insert(0, e);
            }
            next.generation = 2;
            let sealed = v.seal_next(&next, instant(T0 + 86_400.0)).expect("seal");
            store
                .compare_and_swap(Some(1), &sealed)
                .await
                .expect("write");
            (store, sealed)
        })
    }
}

fn verify_and_write(c: &mut Criterion) {
    let f = Fixture::new();
    for entries in [2usize, 64] {
        let (_, v2) = f.stored(entries, &format!("v2-{entries}.json"));
        let trust = KeysetTrust::new(TrustPolicy::default());
        let verified =
            f.rt.block_on(trust.open(&f.registry, "bench", &v2, instant(T0)))
                .expect("open");
        let v1 = StoredKeyset::unauthenticated(&verified.doc).expect("v1");
        let lenient = KeysetTrust::new(TrustPolicy {
            accept_unauthenticated: true,
            ..TrustPolicy::default()
        });
        let mut g = c.benchmark_group(format!("keyset_{entries}_entries"));
        // Per refresh: the stored bytes in, a verified document out (MAC key cached).
        g.bench_function("read_v2_authenticated", |b| {
            b.iter(|| {
                let stored = StoredKeyset::from_bytes(black_box(v2.bytes())).expect("parse");
                f.rt.block_on(trust.open(&f.registry, "bench", &stored, instant(T0)))
                    .expect("open")
            })
        });
        g.bench_function("read_v1_unauthenticated", |b| {
            b.iter(|| {
                let stored = StoredKeyset::from_bytes(black_box(v1.bytes())).expect("parse");
                f.rt.block_on(lenient.open(&f.registry, "bench", &stored, instant(T0)))
                    .expect("open")
            })
        });
        // Per write: the next document's bytes.
        g.bench_function("write_v2_tagged", |b| {
            b.iter(|| {
                verified
                    .seal_next(black_box(&verified.doc), instant(T0 + 86_400.0))
                    .expect("seal")
            })
        });
        g.bench_function("write_v1_plain", |b| {
            b.iter(|| StoredKeyset::unauthenticated(black_box(&verified.doc)).expect("v1"))
        });
        g.finish();
    }
    let (store, _) = f.stored(2, "refresh.json");
    let sched = RotationScheduler::new(
        SchedulerConfig::builder()
            .renew_keyset(false)
            .seal_reservation_block(None)
            .rotation_period(None)
            .build()
            .expect("config"),
        store,
        f.registry.clone(),
        Arc::new(RingHandle::empty()),
        Arc::new(ManualClock::new(instant(T0))),
    )
    .expect("scheduler");
    f.rt.block_on(sched.refresh_at(instant(T0)))
        .expect("refresh");
    let mut g = c.benchmark_group("scheduler_refresh_2_entries");
    // A whole refresh of an unchanged document from a local file, tag included.
    g.bench_function("refresh_v2", |b| {
        b.iter(|| {
            f.rt.block_on(sched.refresh_at(instant(T0 + 1.0)))
                .expect("refresh")
        })
    });
    g.finish();
    let _ = std::fs::remove_dir_all(&f.dir);
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3)).sample_size(40);
    targets = verify_and_write
}
criterion_main!(benches);
