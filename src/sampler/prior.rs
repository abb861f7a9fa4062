//! Warm start: trials of earlier studies (another card, model size or engine version) that
//! seed a model-based sampler, trusted less than the study's own trials.

use super::history::{observations, Observation};
use super::propose::Dims;
use crate::record::promotion_gap;
use crate::record::TrialRecord;

/// Trials of earlier studies of the same engine and how far to trust them.
#[derive(Clone, Debug, Default)]
pub struct Prior {
    /// The earlier trials (their parameters are matched to this study's by name).
    pub trials: Vec<TrialRecord>,
    /// Transfer weight in `(0, 1]`: 1 trusts a prior trial as one of the study's own; smaller
    /// weights add noise to what it says.
    pub weight: f64,
}

pub use crate::space::DEFAULT_TRANSFER_WEIGHT;

impl Prior {
    /// The noise variance (standardised units) a prior trial adds: `1/w − 1`.
    pub(crate) fn extra_noise(&self) -> f64 {
        let w = if self.weight > 0.0 && self.weight.is_finite() {
            self.weight.min(1.0)
        } else {
            DEFAULT_TRANSFER_WEIGHT
        };
        1.0 / w - 1.0
    }
}

/// Noise variance (standardised units) a screening run adds: a short probe measures less
/// precisely, and its gap to the full probe varies from config to config.
const SCREENED_NOISE: f64 = 0.05;

/// A score on a log scale (throughputs span orders of magnitude), sign kept.
pub(crate) fn squash(score: f64) -> f64 {
    score.signum() * score.abs().ln_1p()
}

/// The informative trials of one study, as a model-based sampler learns from them.
pub(crate) struct Source<'a> {
    /// The study's trials.
    pub trials: &'a [TrialRecord],
    /// Its informative trials, indexing into `trials`.
    pub observed: Vec<Observation>,
    /// Noise variance each of its trials adds (0 for the study's own).
    pub extra_noise: f64,
    /// What to add to a screening run's squashed score to put it on the full probe's scale.
    screened_gap: f64,
}

impl<'a> Source<'a> {
    /// The trials of one study.
    pub(crate) fn of(dims: &Dims, trials: &'a [TrialRecord], extra_noise: f64) -> Self {
        Source {
            trials,
            observed: observations(dims, trials),
            extra_noise,
            screened_gap: promotion_gap(trials, |t| t.score.map(squash)),
        }
    }

    /// The squashed score of `o` on the full probe's scale.
    pub(crate) fn log_score(&self, o: &Observation) -> f64 {
        self.on_full_scale(o, squash(o.score), self.screened_gap)
    }

    /// How much higher `measure` reads on the full probe than on a screening run of the same
    /// config, over this study's promoted configs (see [`promotion_gap`]).
    pub(crate) fn screening_gap(&self, measure: impl Fn(&TrialRecord) -> Option<f64>) -> f64 {
        promotion_gap(self.trials, measure)
    }

    /// `value`, measured by `o`, on the full probe's scale: moved by `gap` for a screening run.
    pub(crate) fn on_full_scale(&self, o: &Observation, value: f64, gap: f64) -> f64 {
        if o.fidelity < 1.0 {
            value + gap
        } else {
            value
        }
    }

    /// The noise variance `o` adds: the source's, and more for a screening run.
    pub(crate) fn noise(&self, o: &Observation) -> f64 {
        if o.fidelity < 1.0 {
            self.extra_noise + SCREENED_NOISE
        } else {
            self.extra_noise
        }
    }
}
