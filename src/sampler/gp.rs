//! Gaussian-process regression over the unit cube, the surrogate of the Bayesian sampler.
//!
//! A Matérn-5/2 kernel with one length scale per dimension; a categorical dimension (choice,
//! bool) contributes distance 1 between different categories. Targets are standardised; the
//! length scales and the noise level are chosen by maximising the marginal likelihood over a
//! small fixed grid (a shared scale first, then one sweep rescaling each dimension), so a fit is
//! deterministic. A few dozen points make a hand-written Cholesky factorisation cheaper and
//! simpler than a linear-algebra crate.

/// Shared length scales tried first.
const SCALES: [f64; 6] = [0.08, 0.14, 0.25, 0.4, 0.7, 1.2];
/// Factors tried on each dimension's length scale after the shared one is chosen.
const DIM_FACTORS: [f64; 3] = [0.5, 2.0, 6.0];
/// Noise variances (of the standardised targets) tried. The smallest lets the fit follow
/// readings that agree to a few hundredths of a percent (repeats of configs that differ only in
/// parameters that change nothing), so that near the top of a space whose scores span a factor
/// of several the model still tells configs apart and a search moves along a plateau instead
/// of re-measuring it.
const NOISES: [f64; 4] = [1e-6, 1e-4, 1e-2, 0.1];
/// Diagonal jitter that keeps the factorisation stable.
const JITTER: f64 = 1e-8;

/// A fitted Gaussian process.
pub(crate) struct Gp {
    points: Vec<Vec<f64>>,
    /// Noise variance each point adds to the shared one (standardised units).
    extra_noise: Vec<f64>,
    categories: Vec<Option<usize>>,
    scales: Vec<f64>,
    noise: f64,
    mean: f64,
    spread: f64,
    /// Lower Cholesky factor of the kernel matrix, row-major `n × n`.
    chol: Vec<f64>,
    /// `K⁻¹ (y − mean) / spread`.
    alpha: Vec<f64>,
}

impl Gp {
    /// The process through `points` (unit-cube coordinates, NaN where undefined) with targets
    /// `y`, each point trusted less by its `extra_noise` variance (standardised units; 0 for a
    /// point observed here); `categories[d]` is the number of categories of dimension `d`
    /// (`None`: numeric). `None` when there are fewer than two points.
    pub(crate) fn fit(
        points: Vec<Vec<f64>>,
        y: &[f64],
        extra_noise: &[f64],
        categories: &[Option<usize>],
    ) -> Option<Gp> {
        if points.len() < 2 {
            return None;
        }
        let n = y.len() as f64;
        let mean = y.iter().sum::<f64>() / n;
        let spread = (y.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n)
            .sqrt()
            .max(1e-9);
        let z: Vec<f64> = y.iter().map(|v| (v - mean) / spread).collect();
        let mut gp = Gp {
            points,
            extra_noise: extra_noise.to_vec(),
            categories: categories.to_vec(),
            scales: vec![SCALES[0]; categories.len()],
            noise: NOISES[0],
            mean,
            spread,
            chol: Vec::new(),
            alpha: Vec::new(),
        };
        let mut best = f64::NEG_INFINITY;
        let mut pick = (gp.scales.clone(), gp.noise);
        for &scale in &SCALES {
            for &noise in &NOISES {
                gp.scales.fill(scale);
                gp.noise = noise;
                if let Some(l) = gp.log_likelihood(&z).filter(|l| *l > best) {
                    best = l;
                    pick = (gp.scales.clone(), noise);
                }
            }
        }
        for d in 0..gp.scales.len() {
            let base = pick.0.clone();
            for factor in DIM_FACTORS {
                gp.scales.clone_from(&base);
                gp.scales[d] *= factor;
                gp.noise = pick.1;
                if let Some(l) = gp.log_likelihood(&z).filter(|l| *l > best) {
                    best = l;
                    pick = (gp.scales.clone(), pick.1);
                }
            }
        }
        (gp.scales, gp.noise) = pick;
        gp.log_likelihood(&z)?;
        Some(gp)
    }

    /// Posterior mean and standard deviation at `x`, in the targets' units.
    pub(crate) fn predict(&self, x: &[f64]) -> (f64, f64) {
        let k: Vec<f64> = self.points.iter().map(|p| self.kernel(x, p)).collect();
        let mean: f64 = k.iter().zip(&self.alpha).map(|(a, b)| a * b).sum();
        let v = solve_lower(&self.chol, &k);
        let variance = (1.0 + self.noise - v.iter().map(|a| a * a).sum::<f64>()).max(1e-12);
        (
            self.mean + self.spread * mean,
            self.spread * variance.sqrt(),
        )
    }

    /// Standard deviation of the targets before any observation, in their units.
    pub(crate) fn prior_sd(&self) -> f64 {
        self.spread * (1.0 + self.noise).sqrt()
    }

    /// Factorises the kernel matrix under the current hyperparameters and returns the log
    /// marginal likelihood of `z`; `None` when the matrix is not positive definite.
    fn log_likelihood(&mut self, z: &[f64]) -> Option<f64> {
        let n = self.points.len();
        let mut k = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..=i {
                let v = self.kernel(&self.points[i], &self.points[j]);
                k[i * n + j] = v;
                k[j * n + i] = v;
            }
            k[i * n + i] += self.noise + self.extra_noise.get(i).copied().unwrap_or(0.0) + JITTER;
        }
        cholesky(&mut k, n)?;
        let w = solve_lower(&k, z);
        self.alpha = solve_upper(&k, &w);
        self.chol = k;
        let log_det: f64 = (0..n).map(|i| self.chol[i * n + i].ln()).sum();
        Some(-0.5 * w.iter().map(|a| a * a).sum::<f64>() - log_det)
    }

    /// Matérn-5/2 covariance of two points (unit signal variance).
    fn kernel(&self, a: &[f64], b: &[f64]) -> f64 {
        let r2: f64 = a
            .iter()
            .zip(b)
            .zip(&self.categories)
            .zip(&self.scales)
            .map(|(((&a, &b), cats), scale)| {
                let d = match cats {
                    Some(k) if *k > 1 => f64::from(u8::from(cell(a, *k) != cell(b, *k))),
                    _ => defined(a) - defined(b),
                };
                (d / scale).powi(2)
            })
            .sum();
        let r = (5.0 * r2).sqrt();
        (1.0 + r + r * r / 3.0) * (-r).exp()
    }
}

/// A numeric coordinate, with an undefined one at the centre.
fn defined(u: f64) -> f64 {
    if u.is_finite() {
        u
    } else {
        0.5
    }
}

/// The category of `u` (one past the last for an undefined coordinate).
fn cell(u: f64, k: usize) -> usize {
    if u.is_finite() {
        ((u * k as f64) as usize).min(k - 1)
    } else {
        k
    }
}

/// In-place lower Cholesky factor of the symmetric `n × n` matrix `a` (upper part zeroed).
fn cholesky(a: &mut [f64], n: usize) -> Option<()> {
    for j in 0..n {
        let d = a[j * n + j] - (0..j).map(|k| a[j * n + k].powi(2)).sum::<f64>();
        if d <= 0.0 || !d.is_finite() {
            return None;
        }
        let d = d.sqrt();
        a[j * n + j] = d;
        for i in j + 1..n {
            let s: f64 = (0..j).map(|k| a[i * n + k] * a[j * n + k]).sum();
            a[i * n + j] = (a[i * n + j] - s) / d;
        }
        for i in 0..j {
            a[i * n + j] = 0.0;
        }
    }
    Some(())
}

/// Solves `L x = b` for the lower-triangular `L`.
fn solve_lower(l: &[f64], b: &[f64]) -> Vec<f64> {
    let n = b.len();
    let mut x = vec![0.0; n];
    for i in 0..n {
        let s: f64 = (0..i).map(|k| l[i * n + k] * x[k]).sum();
        x[i] = (b[i] - s) / l[i * n + i];
    }
    x
}

/// Solves `Lᵀ x = b` for the lower-triangular `L`.
fn solve_upper(l: &[f64], b: &[f64]) -> Vec<f64> {
    let n = b.len();
    let mut x = vec![0.0; n];
    for i in (0..n).rev() {
        let s: f64 = (i + 1..n).map(|k| l[k * n + i] * x[k]).sum();
        x[i] = (b[i] - s) / l[i * n + i];
    }
    x
}

/// Natural log of the standard normal density.
pub(crate) fn log_pdf(z: f64) -> f64 {
    -0.5 * z * z - 0.5 * (2.0 * std::f64::consts::PI).ln()
}

/// Natural log of the standard normal distribution function, accurate far in the lower tail.
pub(crate) fn log_cdf(z: f64) -> f64 {
    if z < -8.0 {
        // Mills ratio: Φ(z) ≈ φ(z) / −z.
        log_pdf(z) - (-z).ln()
    } else {
        (0.5 * erfc(-z / std::f64::consts::SQRT_2)).max(1e-300).ln()
    }
}

/// Log of the expected improvement over `best` of a normal prediction `(mean, sd)`.
pub(crate) fn log_expected_improvement(mean: f64, sd: f64, best: f64) -> f64 {
    let z = (mean - best) / sd;
    if z < -8.0 {
        // z Φ(z) + φ(z) ≈ φ(z) / z² in the far tail.
        sd.ln() + log_pdf(z) - 2.0 * (-z).ln()
    } else {
        let cdf = 0.5 * erfc(-z / std::f64::consts::SQRT_2);
        (sd * (z * cdf + log_pdf(z).exp())).max(1e-300).ln()
    }
}

/// Complementary error function (Numerical Recipes' Chebyshev fit, relative error < 1.2e-7).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolates_a_smooth_function_and_is_unsure_far_from_data() {
        let f = |x: f64| (3.0 * x).sin();
        let points: Vec<Vec<f64>> = (0..8).map(|i| vec![i as f64 / 14.0]).collect();
        let y: Vec<f64> = points.iter().map(|p| f(p[0])).collect();
        let gp = Gp::fit(points, &y, &[0.0; 8], &[None]).unwrap();
        let (m, sd_near) = gp.predict(&[0.25]);
        assert!((m - f(0.25)).abs() < 0.02, "{m} vs {}", f(0.25));
        let (_, sd_far) = gp.predict(&[0.95]);
        assert!(sd_far > 5.0 * sd_near, "{sd_far} vs {sd_near}");
    }

    #[test]
    fn resolves_differences_far_below_the_spread_when_repeats_agree() {
        // A smooth climb to a peak at x = 0.5 and, near the top, two configs 0.1% apart, each
        // measured three times (another parameter, which changes nothing, moved) with the same
        // reading, as runs that share their noise do.
        let climb = |x: f64| 100.0 - 400.0 * (x - 0.5).powi(2);
        let mut points: Vec<Vec<f64>> = (0..=10).map(|i| vec![f64::from(i) / 10.0, 0.5]).collect();
        for x in [0.49, 0.52] {
            points.extend([0.1, 0.5, 0.9].map(|other| vec![x, other]));
        }
        let y: Vec<f64> = points.iter().map(|p| climb(p[0])).collect();
        let n = y.len();
        let gp = Gp::fit(points, &y, &vec![0.0; n], &[None, None]).unwrap();
        let (better, sd) = gp.predict(&[0.49, 0.5]);
        let (worse, _) = gp.predict(&[0.52, 0.5]);
        assert!(better > worse, "{better} vs {worse}");
        assert!(sd < 0.05, "unsure by {sd} between repeats that agree");
    }

    #[test]
    fn categories_are_learnt_apart() {
        let points: Vec<Vec<f64>> = (0..10)
            .map(|i| vec![(i % 2) as f64 * 0.5 + 0.25, i as f64 / 10.0])
            .collect();
        let y: Vec<f64> = (0..10)
            .map(|i| if i % 2 == 0 { 1.0 } else { 5.0 })
            .collect();
        let gp = Gp::fit(points, &y, &[0.0; 10], &[Some(2), None]).unwrap();
        assert!(gp.predict(&[0.1, 0.55]).0 < 2.0);
        assert!(gp.predict(&[0.9, 0.55]).0 > 4.0);
    }

    #[test]
    fn normal_tails_and_improvement_are_consistent() {
        assert!((log_cdf(0.0) - 0.5f64.ln()).abs() < 1e-6);
        assert!((log_cdf(1.959_964) - 0.975f64.ln()).abs() < 1e-6);
        assert!(log_cdf(-40.0).is_finite() && log_cdf(-40.0) < log_cdf(-9.0));
        let (near, far) = (
            log_expected_improvement(0.0, 1.0, 0.5),
            log_expected_improvement(0.0, 1.0, 20.0),
        );
        assert!(near > far && far.is_finite());
        // At the incumbent, EI = σ φ(0).
        let at = log_expected_improvement(2.0, 0.5, 2.0);
        assert!((at - (0.5 * log_pdf(0.0).exp()).ln()).abs() < 1e-6);
    }
}
