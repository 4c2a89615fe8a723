//! How `stateseal bench` samples: ops timed in interleaved batches, and
//! medians over the rounds of that sampling.

use std::time::{Duration, Instant};

/// Nanoseconds per call of each op, sampled in rounds: every round times one
/// batch of each op in turn, so a slow patch of the machine hits all of them
/// alike and per-round ratios between ops stay meaningful. Returns one
/// `Vec` of samples per op (one sample per round).
pub(super) fn interleaved_ns(budget: Duration, ops: &mut [&mut dyn FnMut()]) -> Vec<Vec<f64>> {
    // Calibrate each op's batch to about 1/100 of the budget.
    let batches: Vec<u64> = ops
        .iter_mut()
        .map(|op| {
            let mut batch = 1u64;
            loop {
                let t = Instant::now();
                for _ in 0..batch {
                    op();
                }
                if t.elapsed() * 100 >= budget || batch >= 1 << 24 {
                    break batch;
                }
                batch *= 2;
            }
        })
        .collect();
    let mut samples = vec![Vec::new(); ops.len()];
    let start = Instant::now();
    while samples[0].len() < 5 || (start.elapsed() < budget * 5 && samples[0].len() < 200) {
        for ((op, batch), out) in ops.iter_mut().zip(&batches).zip(&mut samples) {
            let t = Instant::now();
            for _ in 0..*batch {
                op();
            }
            out.push(t.elapsed().as_nanos() as f64 / *batch as f64);
        }
    }
    samples
}

/// The median over rounds of `f(round)`.
pub(super) fn median_of_rounds(samples: &[Vec<f64>], f: impl Fn(usize) -> f64) -> f64 {
    let mut v: Vec<f64> = (0..samples[0].len()).map(f).collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
