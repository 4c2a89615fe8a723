//! The refresh loop: every R with jitter, sooner when an unknown key id asks,
//! with backoff while refreshes fail.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{Inner, RotationScheduler};

impl RotationScheduler {
    /// Runs the refresh loop: every R (±jitter), sooner when an unknown key id
    /// asks, with backoff while refreshes fail. Needs a tokio runtime.
    pub fn spawn(&self) -> tokio::task::JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            let mut failures = 0u32;
            loop {
                let ok = this.refresh().await.is_ok();
                failures = if ok { 0 } else { failures.saturating_add(1) };
                let r = this.inner.config.timing.refresh_interval;
                let wait = if failures > 0 {
                    r.min(2f64.powi(failures.min(6) as i32 - 1))
                } else {
                    this.jittered(r)
                };
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs_f64(wait)) => {}
                    () = this.inner.wake.notified() => {}
                }
            }
        })
    }

    fn jittered(&self, r: f64) -> f64 {
        let mut b = [0u8; 8];
        let unit = if crate::random::fill_os(&mut b).is_ok() {
            (u64::from_le_bytes(b) >> 11) as f64 / (1u64 << 53) as f64
        } else {
            0.5
        };
        r * (1.0 + self.inner.config.jitter * (2.0 * unit - 1.0))
    }
}

impl Inner {
    pub(super) fn request_early_refresh(&self) {
        let now_ms = (self.clock.now() * 1000.0) as u64;
        let last = self.last_early_ms.load(Ordering::Relaxed);
        let min_gap = (self.config.early_refresh_min_interval * 1000.0) as u64;
        if now_ms.saturating_sub(last) >= min_gap
            && self
                .last_early_ms
                .compare_exchange(last, now_ms, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.early_requested.store(true, Ordering::SeqCst);
            self.wake.notify_one();
        }
    }
}
