//! Per-second counts over the simulated span: what peaks and means are read from.

/// Events counted per simulated second.
#[derive(Debug, Clone, Default)]
pub(crate) struct Series {
    per_second: Vec<u32>,
    total: u64,
}

impl Series {
    pub(crate) fn add(&mut self, t: f64) {
        let s = t.max(0.0) as usize;
        if self.per_second.len() <= s {
            self.per_second.resize(s + 1, 0);
        }
        self.per_second[s] += 1;
        self.total += 1;
    }

    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// The busiest second's count.
    pub(crate) fn peak(&self) -> u32 {
        self.per_second.iter().copied().max().unwrap_or(0)
    }

    /// The busiest second of this series and `other` added together.
    pub(crate) fn peak_with(&self, other: &Self) -> u32 {
        let len = self.per_second.len().max(other.per_second.len());
        (0..len)
            .map(|s| {
                self.per_second.get(s).copied().unwrap_or(0)
                    + other.per_second.get(s).copied().unwrap_or(0)
            })
            .max()
            .unwrap_or(0)
    }

    /// Mean per second over `span` seconds.
    pub(crate) fn mean(&self, span: f64) -> f64 {
        if span > 0.0 {
            self.total as f64 / span
        } else {
            0.0
        }
    }
}

/// A token bucket: `rate` per second sustained, `burst` at once.
#[derive(Debug, Clone)]
pub(crate) struct Bucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    at: f64,
}

impl Bucket {
    pub(crate) fn new(rate: f64, burst: f64) -> Self {
        Self {
            rate,
            burst,
            tokens: burst,
            at: 0.0,
        }
    }

    /// Takes one token at `t`, if there is one.
    pub(crate) fn take(&mut self, t: f64) -> bool {
        if t > self.at {
            self.tokens = (self.tokens + (t - self.at) * self.rate).min(self.burst);
            self.at = t;
        }
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_and_buckets() {
        let mut s = Series::default();
        for t in [0.1, 0.2, 5.5] {
            s.add(t);
        }
        assert_eq!((s.total(), s.peak()), (3, 2));
        assert!((s.mean(10.0) - 0.3).abs() < 1e-9);
        let mut b = Bucket::new(1.0, 2.0);
        assert!(b.take(0.0) && b.take(0.0) && !b.take(0.0));
        assert!(!b.take(0.5) && b.take(1.0));
    }
}
