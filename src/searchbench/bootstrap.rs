//! Bootstrap intervals for the pruner comparison's ratios: how far a ratio of summed medians
//! moves when each scenario's searches are drawn again with replacement, so that a reader can
//! tell a real miss from the luck of a few seeds.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Resamples drawn.
const DRAWS: usize = 2000;
/// Seed of the resampling, so that a rerun of the benchmark prints the same interval.
const SEED: u64 = 18;

/// The 5th and 95th percentiles of `Σ stat(off) / Σ stat(on)` over the scenarios of
/// `samples` (per scenario: a figure of each search without the pruner and of each with it)
/// when each list is drawn again with replacement. A draw where the pruned searches never get
/// there counts as 0, whatever the others do.
pub fn ratio_interval(
    samples: &[(Vec<f64>, Vec<f64>)],
    stat: impl Fn(&[f64]) -> f64,
) -> (f64, f64) {
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    let mut redraw = |values: &[f64]| -> Vec<f64> {
        (0..values.len())
            .map(|_| values[rng.random_range(0..values.len())])
            .collect()
    };
    let mut ratios: Vec<f64> = (0..DRAWS)
        .map(|_| {
            let (mut off, mut on) = (0.0, 0.0);
            for (f, s) in samples
                .iter()
                .filter(|(f, s)| !f.is_empty() && !s.is_empty())
            {
                off += stat(&redraw(f));
                on += stat(&redraw(s));
            }
            ratio(off, on)
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    let at = |q: f64| ratios[((DRAWS - 1) as f64 * q).round() as usize];
    (at(0.05), at(0.95))
}

/// `off / on`, 0 when the on figure is infinite or undefined.
fn ratio(off: f64, on: f64) -> f64 {
    if on.is_finite() {
        off / on
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::stats::median;

    #[test]
    fn runs_that_agree_give_no_spread_and_a_pruned_side_that_never_gets_there_gives_zero() {
        let alike = [
            (vec![30.0; 5], vec![20.0; 5]),
            (vec![10.0; 3], vec![0.0; 3]),
        ];
        assert_eq!(ratio_interval(&alike, median), (2.0, 2.0));
        let never = [(vec![30.0; 5], vec![f64::INFINITY; 5])];
        assert_eq!(ratio_interval(&never, median), (0.0, 0.0));
    }

    #[test]
    fn the_interval_spans_the_point_ratio_and_widens_with_the_spread_of_the_runs() {
        let off: Vec<f64> = (1..=20).map(|i| 100.0 + 10.0 * f64::from(i)).collect();
        let on: Vec<f64> = off.iter().map(|s| s / 1.5).collect();
        let point = median(&off) / median(&on);
        let (lo, hi) = ratio_interval(&[(off.clone(), on.clone())], median);
        assert!(lo < point && point < hi, "{lo} {point} {hi}");
        let wider: Vec<f64> = on.iter().map(|s| s * s / 100.0).collect();
        let (wlo, whi) = ratio_interval(&[(off, wider)], median);
        assert!(whi - wlo > hi - lo, "{wlo}–{whi} against {lo}–{hi}");
    }
}
