//! Pruning: stop a probe as soon as an SLO can no longer hold, whatever the remaining requests do.
//!
//! With `P` planned requests and `f` failed so far, a statistic of a per-request latency is
//! computed over at most `n = P − f` samples (ITL pools every gap, so it is never pruned on). A
//! percentile `q` is certainly above `X` once `a` samples exceed `X` with `a ≥ n − ⌊q·(n − 1)⌋`
//! (that holds for nearest-rank and for interpolated percentiles); a mean is once the sum of the
//! samples so far exceeds `X·n` (latencies are non-negative); a maximum is at the first sample
//! above `X`. The error rate is certainly above `e` once `f > e·P`.

use crate::exec::interrupt::StopFlag;
use crate::probe::{EarlyStop, LiveStats, PruneHook};
use crate::record::{metric, Slo, SloOp};
use std::sync::Arc;

/// A hook that stops the probe when `stop` is raised, and (when `prune` is set) as soon as one
/// of `slos` is certainly broken.
pub(crate) fn hook(slos: &[Slo], prune: bool, stop: StopFlag) -> PruneHook {
    let slos: Vec<Slo> = if prune { slos.to_vec() } else { Vec::new() };
    Arc::new(move |stats: &LiveStats| {
        if stop.is_raised() {
            return Some(EarlyStop::Interrupted);
        }
        let broken = slos.iter().find_map(|slo| certainly_broken(slo, stats));
        broken.map(EarlyStop::Pruned)
    })
}

/// Why `slo` can no longer hold given `stats`, or `None` while it still might.
pub(crate) fn certainly_broken(slo: &Slo, stats: &LiveStats) -> Option<String> {
    if slo.op != SloOp::Le {
        return None;
    }
    if slo.metric == metric::ERROR_RATE {
        let bound = slo.threshold * stats.planned as f64;
        return (stats.planned > 0 && stats.failed as f64 > bound).then(|| {
            format!(
                "{slo} certainly broken: {} of {} planned requests already failed",
                stats.failed, stats.planned
            )
        });
    }
    let latency = slo.latency().filter(|l| l.per_request())?;
    let samples = stats.samples(latency);
    let threshold = slo.threshold;
    let above = samples.iter().filter(|v| **v > threshold).count() as u64;
    let max_samples = stats.planned.saturating_sub(stats.failed);
    let stat = slo.stat.as_deref()?;
    let broken = match stat {
        "max" => above > 0,
        "mean" => {
            let sum: f64 = samples.iter().sum();
            max_samples > 0 && sum > threshold * max_samples as f64
        }
        _ => {
            let q = percentile_of(stat)?;
            max_samples > 0 && above >= max_samples - (q * (max_samples - 1) as f64).floor() as u64
        }
    };
    broken.then(|| {
        format!(
            "{slo} certainly broken: {above} of at most {max_samples} requests already above {threshold}ms"
        )
    })
}

fn percentile_of(stat: &str) -> Option<f64> {
    match stat {
        "median" | "p50" => Some(0.5),
        "p90" => Some(0.9),
        "p95" => Some(0.95),
        "p99" => Some(0.99),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Latency;

    fn stats(planned: u64, failed: u64, ttft: Vec<f64>) -> LiveStats {
        LiveStats {
            planned,
            finished: ttft.len() as u64 + failed,
            failed,
            latencies_ms: [(Latency::Ttft, ttft)].into(),
            ..LiveStats::default()
        }
    }

    fn slo(text: &str) -> Slo {
        text.parse().unwrap()
    }

    #[test]
    fn p99_breaks_only_when_more_than_one_percent_is_already_above() {
        let s = slo("ttft:p99<=2s");
        // 200 planned: broken once 200 - floor(0.99 * 199) = 3 samples are above.
        let two_above = stats(200, 0, vec![2500.0, 2600.0, 10.0]);
        assert_eq!(certainly_broken(&s, &two_above), None);
        let three_above = stats(200, 0, vec![2500.0, 2600.0, 2700.0]);
        let reason = certainly_broken(&s, &three_above).unwrap();
        assert!(
            reason.starts_with("ttft:p99<=2000ms certainly broken"),
            "{reason}"
        );
    }

    #[test]
    fn pruning_never_fires_on_a_run_that_meets_the_slo() {
        // Brute force over complete runs: whenever the rule fires, p99 is above X for
        // nearest-rank and interpolated percentiles alike.
        let mut fired = 0;
        let s = slo("ttft:p99<=100ms");
        for n in [10usize, 100, 150] {
            for above in 0..=4usize {
                let mut v: Vec<f64> = (0..n - above).map(|_| 50.0).collect();
                v.extend((0..above).map(|_| 150.0));
                let pruned = certainly_broken(&s, &stats(n as u64, 0, v.clone())).is_some();
                v.sort_by(f64::total_cmp);
                let rank = 0.99 * (n - 1) as f64;
                let lower = v[rank.floor() as usize];
                let upper = v[rank.ceil() as usize];
                let interpolated = lower + (upper - lower) * rank.fract();
                let nearest = v[((0.99 * n as f64).ceil() as usize).max(1) - 1];
                if pruned {
                    fired += 1;
                    assert!(
                        interpolated > 100.0 && nearest > 100.0,
                        "n={n} above={above}"
                    );
                }
            }
        }
        assert!(fired >= 3, "the rule fired only {fired} times");
    }

    #[test]
    fn every_per_request_latency_prunes_and_itl_never_does() {
        let mut live = stats(10, 0, vec![]);
        for latency in Latency::ALL {
            live.latencies_ms.insert(latency, vec![500.0; 10]);
        }
        for latency in Latency::ALL {
            let s = slo(&format!("{latency}:max<=100ms"));
            let pruned = certainly_broken(&s, &live).is_some();
            assert_eq!(pruned, latency.per_request(), "{latency}");
        }
    }

    #[test]
    fn error_rate_and_mean_and_interrupt() {
        let e = slo("error_rate<=1%");
        assert!(certainly_broken(&e, &stats(100, 1, vec![])).is_none());
        assert!(certainly_broken(&e, &stats(100, 2, vec![])).is_some());
        let m = slo("ttft:mean<=100ms");
        assert!(certainly_broken(&m, &stats(4, 0, vec![300.0])).is_none());
        assert!(certainly_broken(&m, &stats(4, 0, vec![300.0, 101.0])).is_some());
        let stop = StopFlag::default();
        let h = hook(&[m], false, stop.clone());
        assert_eq!(h(&stats(4, 0, vec![1e6, 1e6])), None);
        stop.raise();
        assert_eq!(h(&stats(4, 0, vec![])), Some(EarlyStop::Interrupted));
    }
}
