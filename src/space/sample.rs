//! Uniform sampling of a space, to estimate which share of it is feasible and why the rest is not.

use super::{ParamDef, Rejection};
use crate::record::Params;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

/// How many feasible examples an estimate keeps.
const EXAMPLES: usize = 3;
/// How many rejected examples it keeps (one per rule).
const REJECTED_EXAMPLES: usize = 6;

/// The outcome of checking `total` uniformly sampled configs.
#[derive(Clone, Debug, Default)]
pub(crate) struct Estimate {
    /// Configs sampled.
    pub total: usize,
    /// Configs that passed.
    pub feasible: usize,
    /// Rejections per rule or constraint.
    pub rejected_by: BTreeMap<String, usize>,
    /// Rejected configs with the reason, the first of each rule.
    pub rejected_examples: Vec<(Params, Rejection)>,
    /// A few feasible, fully resolved configs.
    pub feasible_examples: Vec<Params>,
}

impl Estimate {
    /// The rule or constraint that rejected the most configs, with its count.
    pub(crate) fn top_rejection(&self) -> Option<(&str, usize)> {
        self.rejected_by
            .iter()
            .max_by_key(|(_, n)| **n)
            .map(|(rule, n)| (rule.as_str(), *n))
    }
}

/// One config drawn uniformly from the searchable parameters.
pub(crate) fn draw(params: &[ParamDef], rng: &mut impl Rng) -> Params {
    params
        .iter()
        .filter_map(|p| {
            let value = p.kind.from_unit(rng.random::<f64>())?;
            Some((p.name.clone(), value))
        })
        .collect()
}

/// Samples `total` configs with `seed` and checks each with `resolve`.
pub(crate) fn estimate(
    params: &[ParamDef],
    total: usize,
    seed: u64,
    resolve: impl Fn(&Params) -> Result<Params, Rejection>,
) -> Estimate {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut est = Estimate {
        total,
        ..Estimate::default()
    };
    for _ in 0..total {
        let sampled = draw(params, &mut rng);
        match resolve(&sampled) {
            Ok(config) => {
                est.feasible += 1;
                if est.feasible_examples.len() < EXAMPLES {
                    est.feasible_examples.push(config);
                }
            }
            Err(rejection) => {
                *est.rejected_by.entry(rejection.rule.clone()).or_default() += 1;
                let new_rule = !est
                    .rejected_examples
                    .iter()
                    .any(|(_, r)| r.rule == rejection.rule);
                if new_rule && est.rejected_examples.len() < REJECTED_EXAMPLES {
                    est.rejected_examples.push((sampled, rejection));
                }
            }
        }
    }
    est
}
