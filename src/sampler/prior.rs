//! Warm start: trials of earlier studies (another card, model size or engine version) that
//! seed a model-based sampler, trusted less than the study's own trials.

use super::history::{observations, Observation};
use super::propose::Dims;
use crate::record::TrialRecord;

/// Trials of earlier studies of the same engine and how far to trust them.
#[derive(Clone, Debug, Default)]
pub struct Prior {
    /// The earlier trials (their parameters are matched to this study's by name).
    pub trials: Vec<TrialRecord>,
    /// Transfer weight in `(0, 1]`: 1 trusts a prior trial as one of the study's own; smaller
    /// weights add noise to what it says.
    pub weight: f64,
    /// Recomputes `trials` from the study's own measured trials as they accumulate (the twin
    /// recalibrated on them), at the counts [`refresh_point`] names.
    pub refresh: Option<Refresh>,
}

/// A prior's trials recomputed from the study's own measured trials (in trial order); `None`
/// keeps the trials as they are. Deterministic in its input, so a resumed study replays it.
#[derive(Clone)]
pub struct Refresh(pub std::sync::Arc<RefreshFn>);

/// The function a [`Refresh`] calls.
pub type RefreshFn = dyn Fn(&[TrialRecord]) -> Option<Vec<TrialRecord>> + Send + Sync;

impl std::fmt::Debug for Refresh {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Refresh(..)")
    }
}

/// The number of the study's own measured trials a refreshable prior was last recomputed from,
/// given `measured` of them: 3, 6, 10, then every tenth; `None` below 3.
pub fn refresh_point(measured: usize) -> Option<usize> {
    match measured {
        0..=2 => None,
        3..=5 => Some(3),
        6..=9 => Some(6),
        n => Some(n - n % 10),
    }
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

/// Served trials of the study's own before a prior is checked against them.
pub(crate) const TRUST_CHECK_TRIALS: usize = 4;
/// Rank agreement (Kendall's τ) between a prior's model and the study's own scores below which
/// the prior is set aside, and from which it is trusted almost as the study's own trials.
pub const SET_ASIDE_BELOW: f64 = 0.2;
/// See [`SET_ASIDE_BELOW`].
pub const CONFIRMED_FROM: f64 = 0.5;
/// Noise variance (standardised units) of a confirmed prior's trials.
const CONFIRMED_NOISE: f64 = 0.1;

/// How far an earlier study's trials are trusted once the study's own trials bear them out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trust {
    /// Too few of the study's own trials served to judge; trusted at the transfer weight.
    Unchecked,
    /// Their model orders the study's trials no better than chance (another model, another
    /// workload): left out, as they would only mislead.
    SetAside,
    /// Trusted at the transfer weight.
    Kept,
    /// Their model orders the study's trials well (another card of the same family): trusted
    /// almost as the study's own.
    Confirmed,
}

impl Trust {
    /// The trust that a rank agreement `tau` (Kendall's τ) earns.
    pub(crate) fn of(tau: f64) -> Trust {
        if tau < SET_ASIDE_BELOW {
            Trust::SetAside
        } else if tau >= CONFIRMED_FROM {
            Trust::Confirmed
        } else {
            Trust::Kept
        }
    }

    /// The noise variance a prior's trials add under this trust, starting from `noise`; `None`
    /// sets the prior aside.
    pub(crate) fn noise(self, noise: f64) -> Option<f64> {
        match self {
            Trust::SetAside => None,
            Trust::Confirmed => Some(noise.min(CONFIRMED_NOISE)),
            Trust::Unchecked | Trust::Kept => Some(noise),
        }
    }
}

/// How a warm start's trials stood against the study's own when last checked.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PriorCheck {
    /// The study's own scored trials they were checked against.
    pub own_trials: usize,
    /// Rank agreement (Kendall's τ) between a model of the earlier trials alone and the
    /// study's own scores; `None` while unchecked.
    pub tau: Option<f64>,
    /// What the agreement earned.
    pub trust: Trust,
}

/// The verdict in words, as the report and `tune`'s notes give it.
impl std::fmt::Display for PriorCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tau = match (self.trust, self.tau) {
            (Trust::Unchecked, _) | (_, None) if self.own_trials >= TRUST_CHECK_TRIALS => {
                return f.write_str(
                    "The earlier trials are not checked against this study's own: none of them \
                     was scored, so no model of them can rank this study's trials. They count at \
                     the transfer weight.",
                )
            }
            (Trust::Unchecked, _) | (_, None) => {
                return write!(
                    f,
                    "The earlier trials are not checked against this study's own yet: that takes \
                     {TRUST_CHECK_TRIALS} scored trials of its own, and it has {}. Until then they \
                     count at the transfer weight.",
                    self.own_trials
                )
            }
            (_, Some(tau)) => tau,
        };
        let verdict = match self.trust {
            Trust::SetAside => format!(
                "below {SET_ASIDE_BELOW} they are set aside: the search goes on from this study's \
                 own trials alone"
            ),
            Trust::Confirmed => format!(
                "from {CONFIRMED_FROM} they are confirmed: they count almost as this study's own"
            ),
            _ => {
                format!(
                    "from {SET_ASIDE_BELOW} to {CONFIRMED_FROM} they count at the transfer weight"
                )
            }
        };
        write!(
            f,
            "Checked against this study's {} scored trials: a model of the earlier trials alone \
             ranks them with Kendall's τ = {tau:.2}; {verdict}.",
            self.own_trials
        )
    }
}

/// Kendall's τ between `predicted` and `actual` (pairs tied in either count for neither side);
/// 0 without an untied pair.
pub(crate) fn kendall_tau(predicted: &[f64], actual: &[f64]) -> f64 {
    let (mut agree, mut disagree) = (0.0, 0.0);
    for i in 0..predicted.len().min(actual.len()) {
        for j in 0..i {
            let sign = (predicted[i] - predicted[j]) * (actual[i] - actual[j]);
            if sign > 0.0 {
                agree += 1.0;
            } else if sign < 0.0 {
                disagree += 1.0;
            }
        }
    }
    if agree + disagree > 0.0 {
        (agree - disagree) / (agree + disagree)
    } else {
        0.0
    }
}

/// The informative trials of one study, as a model-based sampler learns from them.
pub(crate) struct Source<'a> {
    /// The study's trials.
    pub trials: &'a [TrialRecord],
    /// Its informative trials, indexing into `trials`.
    pub observed: Vec<Observation>,
    /// Noise variance each of its trials adds (0 for the study's own).
    pub extra_noise: f64,
}

impl<'a> Source<'a> {
    /// The trials of one study.
    pub(crate) fn of(dims: &Dims, trials: &'a [TrialRecord], extra_noise: f64) -> Self {
        Source {
            trials,
            observed: observations(dims, trials),
            extra_noise,
        }
    }

    /// The score of `o` on a log scale (throughputs span orders of magnitude), sign kept.
    pub(crate) fn log_score(&self, o: &Observation) -> f64 {
        o.score.signum() * o.score.abs().ln_1p()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_agreement_sets_aside_keeps_or_confirms_a_prior() {
        assert_eq!(kendall_tau(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]), 1.0);
        assert_eq!(kendall_tau(&[1.0, 2.0, 3.0], &[30.0, 20.0, 10.0]), -1.0);
        assert_eq!(kendall_tau(&[1.0, 1.0], &[1.0, 2.0]), 0.0);
        let tau = kendall_tau(&[1.0, 2.0, 3.0, 4.0], &[1.0, 3.0, 2.0, 4.0]);
        assert!((tau - 4.0 / 6.0).abs() < 1e-12, "{tau}");
        let checked_noise = |noise: f64, tau: f64| Trust::of(tau).noise(noise);
        assert_eq!(checked_noise(1.0, 0.0), None);
        assert_eq!(checked_noise(1.0, 0.3), Some(1.0));
        assert_eq!(checked_noise(1.0, 0.8), Some(CONFIRMED_NOISE));
        assert_eq!(checked_noise(0.0, 0.8), Some(0.0), "a weight of 1 stays");
        assert_eq!(Trust::Unchecked.noise(0.7), Some(0.7));
    }

    #[test]
    fn the_report_says_whether_the_earlier_trials_were_set_aside_kept_or_confirmed() {
        let said = |trust, tau| {
            PriorCheck {
                own_trials: 9,
                tau,
                trust,
            }
            .to_string()
        };
        let set_aside = said(Trust::SetAside, Some(0.05));
        assert!(
            set_aside.contains("this study's 9 scored trials")
                && set_aside.contains("τ = 0.05; below 0.2 they are set aside"),
            "{set_aside}"
        );
        let kept = said(Trust::Kept, Some(0.31));
        assert!(kept.contains("count at the transfer weight"), "{kept}");
        let confirmed = said(Trust::Confirmed, Some(0.8));
        assert!(
            confirmed.contains("from 0.5 they are confirmed"),
            "{confirmed}"
        );
        let unscored = said(Trust::Unchecked, None);
        assert!(unscored.contains("none of them was scored"), "{unscored}");
        let early = PriorCheck {
            own_trials: 2,
            tau: None,
            trust: Trust::Unchecked,
        }
        .to_string();
        assert!(
            early.contains("takes 4 scored trials of its own, and it has 2"),
            "{early}"
        );
    }
}
