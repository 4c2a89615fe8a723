//! Metrics as the tests read them: a body run on its own runtime under a
//! local recorder, and the recorder's values by name.

use std::collections::HashMap;
use std::future::Future;

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};

/// Runs `body` to completion on a current-thread runtime with `recorder`
/// as the metrics recorder.
pub(crate) fn block_on_recorded<F: Future>(
    recorder: &DebuggingRecorder,
    body: impl FnOnce() -> F,
) -> F::Output {
    metrics::with_local_recorder(recorder, || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("rt")
            .block_on(body())
    })
}

/// Every gauge (its value) and counter (summed over its labels) recorded
/// since the last snapshot, by name. A snapshot drains the recorder.
pub(crate) fn values(snapshotter: &Snapshotter) -> HashMap<String, f64> {
    let mut out = HashMap::new();
    for (key, .., value) in snapshotter.snapshot().into_vec() {
        let name = key.key().name().to_owned();
        match value {
            DebugValue::Gauge(v) => {
                out.insert(name, v.into_inner());
            }
            DebugValue::Counter(n) => *out.entry(name).or_insert(0.0) += n as f64,
            DebugValue::Histogram(_) => {}
        }
    }
    out
}
