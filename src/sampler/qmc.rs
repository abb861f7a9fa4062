//! Quasi-random search: an Owen-scrambled Sobol sequence (the `sobol_burley` crate), seeded,
//! which covers the cube more evenly than independent draws in the first few dozen trials.

use super::propose::{first_acceptable, Dims, Tried, MAX_ATTEMPTS};
use super::Sampler;
use crate::record::{Params, TrialRecord};
use crate::space::Feasibility;

/// Dimensions `sobol_burley` provides.
const MAX_DIMS: usize = 256;
/// Points per scrambling seed (`sobol_burley`'s index range).
const POINTS_PER_SEED: usize = 1 << 16;

/// Walks a scrambled Sobol sequence; trial `n` takes point `n` (or the next acceptable one).
pub(crate) struct QmcSampler {
    seed: u64,
}

impl QmcSampler {
    /// A Sobol sampler scrambled by `seed`.
    pub fn new(seed: u64) -> Self {
        QmcSampler { seed }
    }
}

impl Sampler for QmcSampler {
    fn ask(&mut self, space: &dyn Feasibility, trials: &[TrialRecord]) -> anyhow::Result<Params> {
        let dims = Dims::of(space);
        check_dims(dims.len())?;
        let tried = Tried::of(trials);
        first_acceptable(space, &tried, MAX_ATTEMPTS, |attempt| {
            dims.decode(&sobol_point(self.seed, trials.len() + attempt, dims.len()))
        })
    }
}

/// Fails clearly for spaces wider than the sequence supports.
pub(crate) fn check_dims(dims: usize) -> anyhow::Result<()> {
    anyhow::ensure!(
        dims <= MAX_DIMS,
        "the space has {dims} searchable parameters; quasi-random sampling supports at most \
         {MAX_DIMS} (use `random` or fix some parameters as `const`)"
    );
    Ok(())
}

/// Point `index` of the Sobol sequence scrambled by `seed`, in `dims` dimensions.
pub(crate) fn sobol_point(seed: u64, index: usize, dims: usize) -> Vec<f64> {
    let block = (index / POINTS_PER_SEED) as u64;
    let scramble = (seed ^ block.wrapping_mul(0x9E37_79B9)) as u32 ^ (seed >> 32) as u32;
    let i = (index % POINTS_PER_SEED) as u32;
    (0..dims.min(MAX_DIMS))
        .map(|d| f64::from(sobol_burley::sample(i, d as u32, scramble)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_points_stratify_each_axis() {
        // Any 2^k consecutive Sobol points from 0 put one point in each 1/2^k slice of an axis.
        let points: Vec<Vec<f64>> = (0..8).map(|i| sobol_point(11, i, 3)).collect();
        for d in 0..3 {
            let mut cells: Vec<usize> = points.iter().map(|p| (p[d] * 8.0) as usize).collect();
            cells.sort_unstable();
            assert_eq!(cells, (0..8).collect::<Vec<_>>(), "axis {d}");
        }
    }

    #[test]
    fn seeds_scramble_differently() {
        assert_ne!(sobol_point(1, 3, 4), sobol_point(2, 3, 4));
        assert_eq!(sobol_point(1, 3, 4), sobol_point(1, 3, 4));
    }

    #[test]
    fn too_many_dimensions_is_a_clear_error() {
        let err = check_dims(300).unwrap_err().to_string();
        assert!(err.contains("300 searchable parameters"), "{err}");
    }
}
