//! Latency statistics in bounded memory: an HDR histogram (3 significant digits, µs) for
//! percentiles, plus exact count, mean, standard deviation, min and max.

use hdrhistogram::Histogram;
use std::time::Duration;

/// Percentiles reported for every latency.
pub const PERCENTILES: [u8; 4] = [50, 90, 95, 99];

/// Samples of one latency metric.
#[derive(Clone, Debug)]
pub struct LatencyStats {
    histogram: Histogram<u64>,
    count: u64,
    mean_ms: f64,
    /// Sum of squared deviations from the mean (Welford).
    m2: f64,
    min_ms: f64,
    max_ms: f64,
}

impl Default for LatencyStats {
    fn default() -> Self {
        LatencyStats {
            histogram: Histogram::new(3).expect("3 significant digits is a valid precision"),
            count: 0,
            mean_ms: 0.0,
            m2: 0.0,
            min_ms: f64::INFINITY,
            max_ms: f64::NEG_INFINITY,
        }
    }
}

/// The summary statistics of a latency, in milliseconds.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Arithmetic mean.
    pub mean: f64,
    /// 50th percentile.
    pub median: f64,
    /// Population standard deviation.
    pub std: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// p50, p90, p95, p99 (see [`PERCENTILES`]).
    pub percentiles: [f64; 4],
}

impl Summary {
    /// `(statistic name, value)` pairs: mean, median, std, min, max, p50, p90, p95, p99.
    pub fn entries(&self) -> Vec<(String, f64)> {
        let mut entries = vec![
            ("mean".to_string(), self.mean),
            ("median".to_string(), self.median),
            ("std".to_string(), self.std),
            ("min".to_string(), self.min),
            ("max".to_string(), self.max),
        ];
        for (p, value) in PERCENTILES.iter().zip(self.percentiles) {
            entries.push((format!("p{p}"), value));
        }
        entries
    }
}

impl LatencyStats {
    /// Adds one sample.
    pub fn record(&mut self, latency: Duration) {
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        if self.histogram.record(micros).is_err() {
            self.histogram.saturating_record(micros);
        }
        let ms = latency.as_secs_f64() * 1000.0;
        self.count += 1;
        let delta = ms - self.mean_ms;
        self.mean_ms += delta / self.count as f64;
        self.m2 += delta * (ms - self.mean_ms);
        self.min_ms = self.min_ms.min(ms);
        self.max_ms = self.max_ms.max(ms);
    }

    /// Adds every sample of `other` (percentiles of the union, never averaged).
    pub fn merge(&mut self, other: &LatencyStats) {
        if other.count == 0 {
            return;
        }
        self.histogram
            .add(&other.histogram)
            .expect("auto-resizing histograms always merge");
        let total = (self.count + other.count) as f64;
        let delta = other.mean_ms - self.mean_ms;
        self.m2 += other.m2 + delta * delta * self.count as f64 * other.count as f64 / total;
        self.mean_ms += delta * other.count as f64 / total;
        self.count += other.count;
        self.min_ms = self.min_ms.min(other.min_ms);
        self.max_ms = self.max_ms.max(other.max_ms);
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The statistics, or `None` without samples.
    pub fn summary(&self) -> Option<Summary> {
        if self.count == 0 {
            return None;
        }
        let at = |p: f64| {
            let micros = self.histogram.value_at_quantile(p / 100.0);
            let value = self.histogram.median_equivalent(micros) as f64 / 1000.0;
            value.clamp(self.min_ms, self.max_ms)
        };
        Some(Summary {
            mean: self.mean_ms,
            median: at(50.0),
            std: (self.m2 / self.count as f64).sqrt(),
            min: self.min_ms,
            max: self.max_ms,
            percentiles: PERCENTILES.map(|p| at(f64::from(p))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(ms: &[u64]) -> LatencyStats {
        let mut s = LatencyStats::default();
        for &v in ms {
            s.record(Duration::from_millis(v));
        }
        s
    }

    #[test]
    fn exact_moments_and_close_percentiles() {
        let samples: Vec<u64> = (1..=100).collect();
        let s = stats(&samples).summary().unwrap();
        assert!((s.mean - 50.5).abs() < 1e-9);
        assert!((s.std - 28.866).abs() < 1e-3);
        assert_eq!((s.min, s.max), (1.0, 100.0));
        assert!((s.median - 50.0).abs() <= 0.05, "{}", s.median);
        assert!(
            (s.percentiles[3] - 99.0).abs() <= 0.1,
            "{:?}",
            s.percentiles
        );
    }

    #[test]
    fn percentiles_follow_large_values() {
        let s = stats(&[10, 10, 10, 3_000_000]).summary().unwrap();
        assert!(
            (s.percentiles[0] - 10.0).abs() < 0.01,
            "{:?}",
            s.percentiles
        );
        assert!((s.max - 3_000_000.0).abs() < 1e-6);
        assert!(
            (s.percentiles[3] / 3_000_000.0 - 1.0).abs() < 0.001,
            "{:?}",
            s.percentiles
        );
    }

    #[test]
    fn merging_equals_recording_everything() {
        let mut a = stats(&[5, 10, 15]);
        a.merge(&stats(&[100, 200]));
        let all = stats(&[5, 10, 15, 100, 200]).summary().unwrap();
        let merged = a.summary().unwrap();
        assert!((merged.mean - all.mean).abs() < 1e-9);
        assert!((merged.std - all.std).abs() < 1e-9);
        assert_eq!(merged.percentiles, all.percentiles);
        assert!(LatencyStats::default().summary().is_none());
    }
}
