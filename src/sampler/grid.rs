//! Grid search: every combination of per-parameter levels, visited in a seeded but fixed order.

use super::propose::{accept, category_count, Dims, Rejections, Tried};
use super::Sampler;
use crate::record::{Params, TrialRecord, Value};
use crate::space::Feasibility;
use rand::Rng;

/// Levels per numeric parameter when none are given.
pub(crate) const DEFAULT_LEVELS: usize = 3;

/// Largest grid enumerated; larger ones need fewer levels or parameters.
const MAX_POINTS: u64 = 1 << 40;

/// Choices, bools and NUMA lists take all their values; ints and floats `levels` evenly spaced
/// values (in log space for `log: true`, on their step grid), endpoints included.
pub(crate) struct GridSampler {
    seed: u64,
    levels: usize,
}

impl GridSampler {
    /// A grid with `levels` values per numeric parameter (at least 2), visited in an order
    /// fixed by `seed`.
    pub fn new(seed: u64, levels: usize) -> Self {
        GridSampler {
            seed,
            levels: levels.max(2),
        }
    }

    /// Unit-cube coordinates of each parameter's levels (distinct values only).
    fn axes(&self, dims: &Dims) -> Vec<Vec<f64>> {
        dims.defs()
            .iter()
            .map(|def| {
                let positions: Vec<f64> = match category_count(&def.kind) {
                    Some(n) => (0..n).map(|i| (i as f64 + 0.5) / n as f64).collect(),
                    None => (0..self.levels)
                        .map(|i| i as f64 / (self.levels - 1) as f64)
                        .collect(),
                };
                let mut seen: Vec<Value> = Vec::new();
                positions
                    .into_iter()
                    .filter(|&u| match def.kind.from_unit(u) {
                        Some(v) if !seen.contains(&v) => {
                            seen.push(v);
                            true
                        }
                        _ => false,
                    })
                    .collect()
            })
            .collect()
    }
}

impl Sampler for GridSampler {
    fn ask(&mut self, space: &dyn Feasibility, trials: &[TrialRecord]) -> anyhow::Result<Params> {
        let dims = Dims::of(space);
        let axes = self.axes(&dims);
        let total = axes
            .iter()
            .try_fold(1u64, |acc, a| acc.checked_mul(a.len() as u64))
            .filter(|&n| n <= MAX_POINTS)
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "the grid has more than {MAX_POINTS} points; lower the number of levels or \
                     fix some parameters as `const`"
                )
            })?;
        let order = VisitOrder::new(self.seed, total);
        let tried = Tried::of(trials);
        let mut rejections = Rejections::default();
        for k in 0..total {
            let u = point(&axes, order.index(k));
            match accept(space, &tried, &dims.decode(&u)) {
                Ok(params) => return Ok(params),
                Err(why) => rejections.count(why),
            }
        }
        Err(rejections.into_error(total as usize))
    }
}

/// Coordinates of grid point `index` (mixed radix, first parameter fastest).
fn point(axes: &[Vec<f64>], mut index: u64) -> Vec<f64> {
    axes.iter()
        .map(|axis| {
            let n = axis.len() as u64;
            let u = axis[(index % n) as usize];
            index /= n;
            u
        })
        .collect()
}

/// A seeded permutation of `0..total`: `k ↦ (a·k + b) mod total` with `a` coprime to `total`,
/// so neighbouring visits differ in many parameters instead of sweeping one at a time.
struct VisitOrder {
    a: u64,
    b: u64,
    total: u64,
}

impl VisitOrder {
    fn new(seed: u64, total: u64) -> Self {
        let mut rng = super::propose::call_rng(seed, 0, 1);
        let mut a = rng.random_range(0..total.max(1)) | 1;
        while gcd(a, total) != 1 {
            a = a % total + 1;
        }
        VisitOrder {
            a,
            b: rng.random_range(0..total.max(1)),
            total,
        }
    }

    fn index(&self, k: u64) -> u64 {
        ((u128::from(self.a) * u128::from(k) + u128::from(self.b)) % u128::from(self.total)) as u64
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::testkit::{feasible, FnSpaceBuilder};

    #[test]
    fn visit_order_is_a_permutation() {
        for total in [1u64, 2, 12, 81, 97] {
            let order = VisitOrder::new(5, total);
            let mut seen: Vec<u64> = (0..total).map(|k| order.index(k)).collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..total).collect::<Vec<_>>());
        }
    }

    #[test]
    fn enumerates_every_point_once_then_reports_exhaustion() {
        let space = FnSpaceBuilder::new()
            .int("a", 1, 100, None, false)
            .boolean("b")
            .build();
        let mut sampler = GridSampler::new(1, 3);
        let mut trials = Vec::new();
        for _ in 0..6 {
            let p = sampler.ask(&space, &trials).unwrap();
            trials.push(feasible(p, 0.0));
        }
        let mut a: Vec<i64> = trials
            .iter()
            .map(|t| t.params["a"].as_i64().unwrap())
            .collect();
        a.sort_unstable();
        a.dedup();
        assert_eq!(a, [1, 51, 100]);
        let err = sampler.ask(&space, &trials).unwrap_err().to_string();
        assert!(
            err.contains("no feasible untried config found after 6 attempts"),
            "{err}"
        );
    }
}
