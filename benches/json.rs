//! Criterion bench: the request identity of a params object with many short
//! keys (what an attacker can send to the raw-JSON API). Duplicate-key
//! detection must keep the time per member flat as the member count grows.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use stateseal::RequestIdentity;

fn params(members: usize) -> Vec<u8> {
    let args: Vec<String> = (0..members).map(|i| format!("\"{i:x}\":0")).collect();
    format!(r#"{{"name":"t","arguments":{{{}}}}}"#, args.join(",")).into_bytes()
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("identity_many_keys");
    for members in [1_000, 10_000, 100_000] {
        let input = params(members);
        g.throughput(Throughput::Elements(members as u64));
        g.bench_with_input(BenchmarkId::from_parameter(members), &input, |b, p| {
            b.iter(|| RequestIdentity::from_json("tools/call", black_box(p)).expect("identity"));
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).sample_size(20);
    targets = bench
}
criterion_main!(benches);
