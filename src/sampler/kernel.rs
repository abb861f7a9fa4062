//! Kernel density estimates over the unit cube: the Parzen estimators of TPE and the
//! kernel classifier that learns where configs fail to start.
//!
//! Kernels are products over the dimensions both points define: a Gaussian for numeric
//! dimensions, and for categorical ones (choices, bools) a kernel that keeps the category with
//! probability `1 − ε` and moves to another one with probability `ε` (Aitchison–Aitken), so the
//! search keeps trying other categories. A dimension that either point leaves undefined (an
//! inactive conditional parameter) contributes the uniform density 1, so points of different
//! shapes still compare.

use rand::Rng;
use rand_distr::{Distribution, StandardNormal};

/// A Parzen estimator: a mixture of kernels at `centres` plus a uniform prior component.
pub(crate) struct Parzen<'a> {
    centres: Vec<&'a [f64]>,
    bandwidth: f64,
    prior_weight: f64,
    categories: &'a [Option<usize>],
}

impl<'a> Parzen<'a> {
    /// An estimator over `centres` with kernel width `bandwidth` (unit-cube scale; also the
    /// probability of switching category), where `categories[d]` is the number of categories of
    /// dimension `d` (`None` for numeric ones).
    pub(crate) fn new(
        centres: Vec<&'a [f64]>,
        bandwidth: f64,
        prior_weight: f64,
        categories: &'a [Option<usize>],
    ) -> Self {
        Parzen {
            centres,
            bandwidth,
            prior_weight,
            categories,
        }
    }

    /// Natural log of the density at `x`.
    pub(crate) fn log_density(&self, x: &[f64]) -> f64 {
        let logs: Vec<f64> = self
            .centres
            .iter()
            .map(|c| self.log_kernel(x, c))
            .chain(std::iter::once(self.prior_weight.ln()))
            .collect();
        log_sum_exp(&logs) - (self.centres.len() as f64 + self.prior_weight).ln()
    }

    /// A draw from the mixture: a centre (or the prior) perturbed by the kernel, reflected
    /// into the cube; undefined coordinates of the centre are drawn uniformly.
    pub(crate) fn sample(&self, dims: usize, rng: &mut impl Rng) -> Vec<f64> {
        let total = self.centres.len() as f64 + self.prior_weight;
        let pick = rng.random::<f64>() * total;
        match self.centres.get(pick as usize) {
            Some(centre) => centre
                .iter()
                .zip(self.categories)
                .map(|(&c, cats)| match cats {
                    _ if !c.is_finite() => rng.random(),
                    Some(k) if *k > 1 => {
                        let cell = cell_of(c, *k);
                        let cell = if rng.random::<f64>() < self.bandwidth {
                            (cell + rng.random_range(1..*k)) % k
                        } else {
                            cell
                        };
                        (cell as f64 + 0.5) / *k as f64
                    }
                    _ => {
                        let z: f64 = StandardNormal.sample(rng);
                        reflect(c + self.bandwidth * z)
                    }
                })
                .collect(),
            None => (0..dims).map(|_| rng.random()).collect(),
        }
    }

    /// Log of the kernel at `c` evaluated at `x`, over the dimensions both define.
    fn log_kernel(&self, x: &[f64], c: &[f64]) -> f64 {
        let h = self.bandwidth;
        let gauss_norm = -(h * (2.0 * std::f64::consts::PI).sqrt()).ln();
        x.iter()
            .zip(c)
            .zip(self.categories)
            .filter(|((a, b), _)| a.is_finite() && b.is_finite())
            .map(|((a, b), cats)| match cats {
                Some(k) if *k > 1 => {
                    let k = *k;
                    // Density on [0, 1]: probability of the cell times the number of cells.
                    let eps = h;
                    let p = if cell_of(*a, k) == cell_of(*b, k) {
                        1.0 - eps
                    } else {
                        eps / (k - 1) as f64
                    };
                    (p * k as f64).ln()
                }
                _ => {
                    let z = (a - b) / h;
                    gauss_norm - 0.5 * z * z
                }
            })
            .sum()
    }
}

/// The category whose cell holds `u`.
fn cell_of(u: f64, k: usize) -> usize {
    ((u * k as f64) as usize).min(k - 1)
}

/// Weight of `log(1 − P_fail)` in an acquisition.
const FAILURE_WEIGHT: f64 = 4.0;
/// Failure probability above which a candidate is only taken when nothing else is left.
const LIKELY_FAILURE: f64 = 0.35;
/// Acquisition penalty of such a candidate (larger than any other term in practice).
pub(crate) const LIKELY_FAILURE_PENALTY: f64 = 1e3;

/// An acquisition `value` with the start-up failure probability `p_fail` counted in: plus
/// `w·log(1 − p_fail)`, and less [`LIKELY_FAILURE_PENALTY`] when failure is likelier than
/// `LIKELY_FAILURE`, so such a candidate ranks below every other.
pub(crate) fn with_failure(value: f64, p_fail: f64) -> f64 {
    let value = value + FAILURE_WEIGHT * (1.0 - p_fail).max(1e-9).ln();
    if p_fail > LIKELY_FAILURE {
        value - LIKELY_FAILURE_PENALTY
    } else {
        value
    }
}

/// Neighbours that set the classifier's local kernel width.
const NEIGHBOURS: usize = 5;

/// Probability that a config at `x` fails to start, from nearby failed and started configs: a
/// Gaussian-weighted vote whose width is the distance to the `NEIGHBOURS`-th nearest config
/// (bounded to `[0.02, 0.3]`), so the boundary sharpens where trials crowd around it.
pub(crate) fn failure_probability(x: &[f64], failed: &[&[f64]], started: &[&[f64]]) -> f64 {
    if failed.is_empty() {
        return 0.0;
    }
    let d_failed: Vec<f64> = failed.iter().map(|p| squared_distance(x, p)).collect();
    let d_started: Vec<f64> = started.iter().map(|p| squared_distance(x, p)).collect();
    let mut all: Vec<f64> = d_failed.iter().chain(&d_started).copied().collect();
    all.sort_by(f64::total_cmp);
    let kth = all[(NEIGHBOURS - 1).min(all.len() - 1)];
    let h2 = kth.clamp(0.02f64.powi(2), 0.3f64.powi(2));
    let vote = |d: &[f64]| -> f64 { d.iter().map(|d2| (-0.5 * d2 / h2).exp()).sum() };
    let (bad, good) = (vote(&d_failed), vote(&d_started));
    // The floor keeps regions far from every trial near "unknown = fine".
    bad / (bad + good + 0.05)
}

/// Squared Euclidean distance over the dimensions both points define, scaled to a per-dimension
/// mean so points of different shapes compare.
pub(crate) fn squared_distance(x: &[f64], c: &[f64]) -> f64 {
    let (sum, n) = x
        .iter()
        .zip(c)
        .filter(|(a, b)| a.is_finite() && b.is_finite())
        .fold((0.0, 0usize), |(s, n), (a, b)| {
            (s + (a - b) * (a - b), n + 1)
        });
    if n == 0 {
        0.0
    } else {
        sum / n as f64
    }
}

fn log_sum_exp(values: &[f64]) -> f64 {
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !max.is_finite() {
        return max;
    }
    max + values.iter().map(|v| (v - max).exp()).sum::<f64>().ln()
}

/// Folds a coordinate back into `[0, 1]` by reflection at the edges.
pub(crate) fn reflect(x: f64) -> f64 {
    let m = x.rem_euclid(2.0);
    if m > 1.0 {
        2.0 - m
    } else {
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn density_is_higher_near_centres_and_prior_keeps_it_positive() {
        let a = [0.2, 0.2];
        let p = Parzen::new(vec![&a], 0.1, 1.0, &[None, None]);
        assert!(p.log_density(&[0.2, 0.2]) > p.log_density(&[0.8, 0.8]));
        assert!(p.log_density(&[0.9, 0.9]).is_finite());
    }

    #[test]
    fn undefined_dimensions_are_neutral() {
        let a = [0.2, f64::NAN];
        let p = Parzen::new(vec![&a], 0.1, 1.0, &[None, None]);
        let near = p.log_density(&[0.2, 0.9]);
        let same = p.log_density(&[0.2, 0.1]);
        assert!((near - same).abs() < 1e-12);
    }

    #[test]
    fn categories_mostly_stay_but_sometimes_switch() {
        let a = [0.25];
        let p = Parzen::new(vec![&a], 0.2, 0.0, &[Some(2)]);
        let mut rng = crate::sampler::propose::call_rng(1, 0, 0);
        let draws: Vec<f64> = (0..1000).map(|_| p.sample(1, &mut rng)[0]).collect();
        assert!(draws.iter().all(|&u| u == 0.25 || u == 0.75));
        let switched = draws.iter().filter(|&&u| u == 0.75).count();
        assert!(
            (120..280).contains(&switched),
            "{switched} of 1000 switched"
        );
        assert!((p.log_density(&[0.1]) - (0.8f64 * 2.0).ln()).abs() < 1e-12);
        assert!((p.log_density(&[0.9]) - (0.2f64 * 2.0).ln()).abs() < 1e-12);
    }

    #[test]
    fn failure_probability_tracks_the_failed_side() {
        let around = |cx: f64| -> Vec<[f64; 2]> {
            (0..6)
                .map(|i| [cx + 0.02 * i as f64, 0.4 + 0.04 * i as f64])
                .collect()
        };
        let (f, s) = (around(0.8), around(0.2));
        let failed: Vec<&[f64]> = f.iter().map(|p| p.as_slice()).collect();
        let started: Vec<&[f64]> = s.iter().map(|p| p.as_slice()).collect();
        assert!(failure_probability(&[0.85, 0.5], &failed, &started) > 0.9);
        assert!(failure_probability(&[0.25, 0.5], &failed, &started) < 0.1);
        let middle = failure_probability(&[0.5, 0.5], &failed, &started);
        assert!((0.2..0.8).contains(&middle), "{middle}");
        assert_eq!(failure_probability(&[0.5, 0.5], &[], &started), 0.0);
    }

    #[test]
    fn reflection_stays_in_the_cube() {
        for x in [-1.7, -0.2, 0.0, 0.4, 1.0, 1.3, 2.6] {
            let r = reflect(x);
            assert!((0.0..=1.0).contains(&r), "{x} -> {r}");
        }
        assert!((reflect(1.2) - 0.8).abs() < 1e-12);
    }
}
