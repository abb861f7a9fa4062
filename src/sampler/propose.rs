//! Shared proposal machinery: the searchable dimensions and their unit-cube coordinates, the
//! per-call random stream, and the bounded sample-then-reject loop that makes every proposal
//! resolvable by the space and untried.

use super::batch_inputs::BatchInputs;
use crate::record::{Params, TrialRecord, Value};
use crate::space::{Feasibility, NumaCandidates, ParamDef, ParamKind};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, HashSet};

/// How many candidates a sampler draws before it gives up on finding a feasible untried one.
pub(crate) const MAX_ATTEMPTS: usize = 2000;

/// The parameters a sampler chooses, in declaration order; a config is a point of `[0, 1]^len`.
/// A model's encoding may append inputs derived from the batching parameters.
pub struct Dims<'a> {
    defs: Vec<&'a ParamDef>,
    derived: Option<BatchInputs>,
    /// Whether choices of increasing numbers count as numeric (see [`is_ordinal`]).
    ordinal_choices: bool,
}

impl<'a> Dims<'a> {
    /// The searchable parameters of `space` (those with a unit-interval encoding).
    pub fn of(space: &'a dyn Feasibility) -> Self {
        let defs = space
            .parameters()
            .iter()
            .filter(|p| p.kind.from_unit(0.5).is_some())
            .collect();
        Dims {
            defs,
            derived: None,
            ordinal_choices: false,
        }
    }

    /// The dimensions of `space` as a regression model sees them: the inputs derived from its
    /// batching (see [`BatchInputs`]) after the parameters' own, and choices of increasing
    /// numbers numeric.
    pub(crate) fn for_model(space: &'a dyn Feasibility) -> Self {
        let mut dims = Dims::of(space);
        dims.derived = space
            .batching()
            .and_then(|batching| BatchInputs::of(&batching, &dims.defs));
        dims.ordinal_choices = true;
        dims
    }

    /// Number of dimensions (parameters; derived inputs are not counted).
    pub fn len(&self) -> usize {
        self.defs.len()
    }

    /// Whether the space has no dimension at all.
    pub fn is_empty(&self) -> bool {
        self.defs.is_empty()
    }

    /// Number of categories of each encoded input (choices, bools, NUMA lists); `None` for
    /// numeric ones and derived inputs.
    pub(crate) fn categories(&self) -> Vec<Option<usize>> {
        let derived = self.derived.as_ref().map_or(0, BatchInputs::count);
        self.defs
            .iter()
            .map(|def| match &def.kind {
                kind if self.ordinal_choices && is_ordinal(kind) => None,
                kind => category_count(kind),
            })
            .chain(std::iter::repeat_n(None, derived))
            .collect()
    }

    /// The parameter definitions, one per dimension.
    pub(crate) fn defs(&self) -> &[&'a ParamDef] {
        &self.defs
    }

    /// The sampled (unresolved) config at `u`; coordinates outside `[0, 1]` are clamped, and
    /// derived inputs after the parameters' coordinates are ignored.
    pub fn decode(&self, u: &[f64]) -> Params {
        self.defs
            .iter()
            .zip(u)
            .filter_map(|(def, &x)| {
                let x = if x.is_finite() { x } else { 0.5 };
                Some((def.name.clone(), def.kind.from_unit(x)?))
            })
            .collect()
    }

    /// Coordinates of `params`, then its derived inputs; NaN where a parameter is absent
    /// (inactive) or out of its domain.
    pub(crate) fn encode(&self, params: &Params) -> Vec<f64> {
        let mut x: Vec<f64> = self
            .defs
            .iter()
            .map(|def| {
                params
                    .get(&def.name)
                    .and_then(|v| def.kind.to_unit(v))
                    .unwrap_or(f64::NAN)
            })
            .collect();
        if let Some(derived) = &self.derived {
            derived.encode(params, &mut x);
        }
        x
    }
}

/// Whether `kind` is a choice of more than two increasing numbers (tensor-parallel or world
/// sizes): its values are ordered, so a model measures the distance between two of them by
/// their positions rather than counting every pair as equally unlike. Two values are as far
/// apart either way.
fn is_ordinal(kind: &ParamKind) -> bool {
    let ParamKind::Choice { values } = kind else {
        return false;
    };
    let numbers: Vec<f64> = values.iter().filter_map(Value::as_f64).collect();
    numbers.len() == values.len() && numbers.len() > 2 && numbers.windows(2).all(|w| w[0] < w[1])
}

/// Number of values of a categorical parameter; `None` for numeric ones.
pub(crate) fn category_count(kind: &ParamKind) -> Option<usize> {
    match kind {
        ParamKind::Choice { values } => Some(values.len()),
        ParamKind::Bool => Some(2),
        ParamKind::Numa {
            candidates: NumaCandidates::List(list),
        } => Some(list.len()),
        _ => None,
    }
}

/// The random stream of one call: a function of the sampler's seed, the number of trials seen
/// and a purpose tag, so the same trial list always yields the same proposal.
pub fn call_rng(seed: u64, trials: usize, purpose: u64) -> ChaCha8Rng {
    let mut z = seed
        ^ (trials as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ purpose.wrapping_mul(0xD1B5_4A32_D192_ED03);
    // splitmix64 finaliser: nearby inputs give unrelated streams.
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ChaCha8Rng::seed_from_u64(z ^ (z >> 31))
}

/// Configs already tried, compared after resolution.
pub(crate) struct Tried(HashSet<String>);

impl Tried {
    /// Every config in `trials`.
    pub(crate) fn of(trials: &[TrialRecord]) -> Self {
        Tried(trials.iter().map(|t| config_key(&t.params)).collect())
    }

    /// Whether `params` was tried.
    pub(crate) fn contains(&self, params: &Params) -> bool {
        self.0.contains(&config_key(params))
    }
}

/// A canonical text form of a config (parameters are ordered by name).
fn config_key(params: &Params) -> String {
    params
        .iter()
        .map(|(k, v)| match v {
            // Tag kinds so that 1, 1.0, true and "1" stay distinct configs.
            Value::Bool(b) => format!("{k}=b{b}"),
            Value::Int(i) => format!("{k}=i{i}"),
            Value::Float(f) => format!("{k}=f{f}"),
            Value::Str(s) => format!("{k}=s{s:?}"),
        })
        .collect::<Vec<_>>()
        .join(";")
}

/// Draws candidates from `next(attempt)` until one resolves and was not tried; gives up after
/// `attempts` candidates with an error naming the most frequent rejection.
pub(crate) fn first_acceptable(
    space: &dyn Feasibility,
    tried: &Tried,
    attempts: usize,
    mut next: impl FnMut(usize) -> Params,
) -> anyhow::Result<Params> {
    let mut rejections = Rejections::default();
    for attempt in 0..attempts {
        match accept(space, tried, &next(attempt)) {
            Ok(params) => return Ok(params),
            Err(why) => rejections.count(why),
        }
    }
    Err(rejections.into_error(attempts))
}

/// Why a candidate was not accepted.
pub(crate) enum Refusal {
    /// Already tried.
    Duplicate,
    /// Refused by this constraint or rule.
    Rejected(String),
}

/// The resolved config of `sampled` when the space accepts it and it is new.
pub(crate) fn accept(
    space: &dyn Feasibility,
    tried: &Tried,
    sampled: &Params,
) -> Result<Params, Refusal> {
    let resolved = space
        .resolve(sampled)
        .map_err(|r| Refusal::Rejected(r.rule))?;
    if tried.contains(&resolved) {
        return Err(Refusal::Duplicate);
    }
    Ok(resolved)
}

/// Tally of refused candidates, for the exhaustion message.
#[derive(Default)]
pub(crate) struct Rejections {
    duplicates: usize,
    by_rule: BTreeMap<String, usize>,
}

impl Rejections {
    /// Records one refusal.
    pub(crate) fn count(&mut self, why: Refusal) {
        match why {
            Refusal::Duplicate => self.duplicates += 1,
            Refusal::Rejected(rule) => *self.by_rule.entry(rule).or_default() += 1,
        }
    }

    /// The "space exhausted" error after `attempts` candidates.
    pub(crate) fn into_error(self, attempts: usize) -> anyhow::Error {
        let top = self
            .by_rule
            .iter()
            .max_by_key(|(_, n)| **n)
            .map(|(rule, n)| format!(", most often by `{rule}` ({n}×)"))
            .unwrap_or_default();
        anyhow::anyhow!(
            "no feasible untried config found after {attempts} attempts; the space may be \
             exhausted or its constraints too tight ({} already tried, {} rejected{top}); \
             widen parameter ranges or relax constraints",
            self.duplicates,
            self.by_rule.values().sum::<usize>()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::testkit::mixed_space;
    use crate::space::Batching;

    #[test]
    fn a_model_sees_increasing_numeric_choices_as_ordered() {
        let space = mixed_space();
        let block_size = |dims: &Dims| {
            let d = dims.defs().iter().position(|d| d.name == "block_size");
            dims.categories()[d.unwrap()]
        };
        assert_eq!(block_size(&Dims::of(&space)), Some(3));
        assert_eq!(block_size(&Dims::for_model(&space)), None);
        let choice = |values: Vec<Value>| ParamKind::Choice { values };
        assert!(is_ordinal(&choice(vec![
            Value::Int(1),
            Value::Int(2),
            Value::Int(8)
        ])));
        assert!(!is_ordinal(&choice(vec![Value::Int(16), Value::Int(32)])));
        assert!(!is_ordinal(&choice(vec![
            Value::Int(4),
            Value::Int(2),
            Value::Int(1)
        ])));
        let strings = vec![
            Value::Str("a".into()),
            Value::Str("b".into()),
            Value::Str("c".into()),
        ];
        assert!(!is_ordinal(&choice(strings)));
    }

    #[test]
    fn batch_inputs_follow_the_parameters_and_decoding_ignores_them() {
        let space = mixed_space().with_batching(Batching {
            batch_cap: "max_num_seqs".into(),
            step_tokens: Some("max_num_batched_tokens".into()),
            clients: 64,
        });
        let (plain, model) = (Dims::of(&space), Dims::for_model(&space));
        assert_eq!(model.len(), plain.len(), "derived inputs are not sampled");
        assert_eq!(model.categories().len(), plain.len() + 2);
        let u = vec![0.3; plain.len()];
        let params = plain.decode(&u);
        let x = model.encode(&params);
        assert_eq!(x.len(), plain.len() + 2);
        assert_eq!(x[..plain.len()], plain.encode(&params)[..]);
        assert_eq!(model.decode(&x), params);
    }
}
