//! Nelder–Mead minimisation over a box: a pure solver (no clock, no I/O) that says why it stopped.

/// Why the solver stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopped {
    /// The simplex shrank below the tolerance: a minimum is found.
    Converged,
    /// The evaluation budget ran out first.
    Budget,
}

/// The best point found.
#[derive(Clone, Debug)]
pub struct Minimum<const N: usize> {
    /// Where.
    pub x: [f64; N],
    /// Objective evaluations spent.
    pub evaluations: usize,
    /// Why the search ended.
    pub stopped: Stopped,
}

/// Settings of one minimisation.
#[derive(Clone, Copy, Debug)]
pub struct Simplex<const N: usize> {
    /// Each coordinate stays within `[-bound, bound]`.
    pub bound: f64,
    /// Size of the first simplex along each axis.
    pub step: f64,
    /// Converged when every vertex is this close to the best, on every axis.
    pub tolerance: f64,
    /// Most objective evaluations.
    pub budget: usize,
}

impl<const N: usize> Simplex<N> {
    /// Minimise `f` from `start` (clamped into the box).
    pub fn minimise(&self, start: [f64; N], mut f: impl FnMut(&[f64; N]) -> f64) -> Minimum<N> {
        let clamp = |mut x: [f64; N]| {
            for v in &mut x {
                *v = v.clamp(-self.bound, self.bound);
            }
            x
        };
        let evaluations = std::cell::Cell::new(0);
        let mut eval = |x: [f64; N]| {
            evaluations.set(evaluations.get() + 1);
            let value = f(&x);
            (x, if value.is_nan() { f64::INFINITY } else { value })
        };
        let start = clamp(start);
        let mut vertices: Vec<([f64; N], f64)> = vec![eval(start)];
        for axis in 0..N {
            let mut x = start;
            // Step away from the nearer bound so the vertex differs from the start.
            x[axis] += if x[axis] + self.step <= self.bound {
                self.step
            } else {
                -self.step
            };
            vertices.push(eval(clamp(x)));
        }
        let combine = |a: &[f64; N], b: &[f64; N], t: f64| {
            let mut x = [0.0; N];
            for i in 0..N {
                x[i] = a[i] + t * (b[i] - a[i]);
            }
            clamp(x)
        };
        loop {
            vertices.sort_by(|a, b| a.1.total_cmp(&b.1));
            let best = vertices[0].0;
            let spread = vertices
                .iter()
                .flat_map(|(x, _)| x.iter().zip(&best).map(|(a, b)| (a - b).abs()))
                .fold(0.0, f64::max);
            if spread < self.tolerance {
                return self.found(&vertices[0], evaluations.get(), Stopped::Converged);
            }
            // One more iteration costs at most a reflection, a contraction and a shrink.
            if evaluations.get() + N + 2 > self.budget {
                return self.found(&vertices[0], evaluations.get(), Stopped::Budget);
            }
            let mut centroid = [0.0; N];
            for (x, _) in &vertices[..N] {
                for i in 0..N {
                    centroid[i] += x[i] / N as f64;
                }
            }
            let (worst, worst_value) = vertices[N];
            let second_worst = vertices[N - 1].1;
            let reflected = eval(combine(&centroid, &worst, -1.0));
            if reflected.1 < vertices[0].1 {
                let expanded = eval(combine(&centroid, &worst, -2.0));
                vertices[N] = if expanded.1 < reflected.1 {
                    expanded
                } else {
                    reflected
                };
            } else if reflected.1 < second_worst {
                vertices[N] = reflected;
            } else {
                let contracted = if reflected.1 < worst_value {
                    eval(combine(&centroid, &reflected.0, 0.5))
                } else {
                    eval(combine(&centroid, &worst, 0.5))
                };
                if contracted.1 < worst_value.min(reflected.1) {
                    vertices[N] = contracted;
                } else {
                    for v in vertices.iter_mut().skip(1) {
                        *v = eval(combine(&best, &v.0, 0.5));
                    }
                }
            }
        }
    }

    fn found(&self, best: &([f64; N], f64), evaluations: usize, stopped: Stopped) -> Minimum<N> {
        Minimum {
            x: best.0,
            evaluations,
            stopped,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SETTINGS: Simplex<3> = Simplex {
        bound: 3.0,
        step: 0.5,
        tolerance: 1e-6,
        budget: 2000,
    };

    #[test]
    fn finds_the_minimum_of_a_skewed_bowl() {
        let target = [0.4, -1.1, 2.0];
        let m = SETTINGS.minimise([0.0; 3], |x| {
            (x[0] - target[0]).powi(2)
                + 10.0 * (x[1] - target[1]).powi(2)
                + (x[2] - target[2] + 0.5 * (x[0] - target[0])).powi(2)
        });
        assert_eq!(m.stopped, Stopped::Converged);
        for (got, want) in m.x.iter().zip(target) {
            assert!((got - want).abs() < 1e-4, "{:?}", m.x);
        }
    }

    #[test]
    fn stays_in_the_box_and_reports_the_budget() {
        let m = SETTINGS.minimise([0.0; 3], |x| -x[0] - x[1] - x[2]);
        assert!(m.x.iter().all(|v| (v - 3.0).abs() < 1e-3), "{:?}", m.x);
        let tight = Simplex {
            budget: 10,
            ..SETTINGS
        };
        let m = tight.minimise([0.0; 3], |x| x.iter().map(|v| (v - 1.0).powi(2)).sum());
        assert_eq!(m.stopped, Stopped::Budget);
        assert!(m.evaluations <= 10);
    }
}
