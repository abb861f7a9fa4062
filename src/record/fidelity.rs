//! Screening runs against the full-probe runs of the same configs.

use super::TrialRecord;

/// How much higher `measure` reads on a config's full-probe run than on its screening run: the
/// median over the configs of `records` promoted from screening to the full probe; 0 before
/// any.
pub fn promotion_gap(
    records: &[TrialRecord],
    measure: impl Fn(&TrialRecord) -> Option<f64>,
) -> f64 {
    middle(promotion_gaps(records, measure))
}

/// How far the gaps of [`promotion_gap`] stray from their median: the median absolute
/// deviation, the resolution at which screening runs rank configs on the full probe's scale;
/// 0 before three promoted configs.
pub fn promotion_gap_spread(
    records: &[TrialRecord],
    measure: impl Fn(&TrialRecord) -> Option<f64>,
) -> f64 {
    let gaps = promotion_gaps(records, measure);
    if gaps.len() < 3 {
        return 0.0;
    }
    let centre = middle(gaps.clone());
    middle(gaps.iter().map(|gap| (gap - centre).abs()).collect())
}

/// A score on a log scale (throughputs span orders of magnitude), sign kept.
pub fn squash(score: f64) -> f64 {
    score.signum() * score.abs().ln_1p()
}

/// The score whose [`squash`] is `squashed`.
pub fn unsquash(squashed: f64) -> f64 {
    squashed.signum() * squashed.abs().exp_m1()
}

/// Probe seconds `run` added to the study of `records`: its probe's, less those of the
/// screening run it went on from in place (their requests are shared); `None` without a probe
/// duration.
pub fn added_probe_seconds(run: &TrialRecord, records: &[TrialRecord]) -> Option<f64> {
    let seconds = |r: &TrialRecord| r.metrics.get("duration_s").copied();
    let shared = match run.promoted_from.filter(|_| run.continued) {
        Some(from) => seconds(records.iter().find(|r| r.number == from)?)?,
        None => 0.0,
    };
    Some(seconds(run)? - shared)
}

/// Full-probe reading minus screening reading of `measure`, per promoted config of `records`.
fn promotion_gaps(
    records: &[TrialRecord],
    measure: impl Fn(&TrialRecord) -> Option<f64>,
) -> Vec<f64> {
    records
        .iter()
        .filter(|full| full.is_full_probe())
        .filter_map(|full| {
            let from = full.promoted_from?;
            let screened = records.iter().find(|r| r.number == from)?;
            Some(measure(full)? - measure(screened)?)
        })
        .filter(|gap| gap.is_finite())
        .collect()
}

/// The median of `values` (the upper middle one for an even count); 0 for none.
pub(crate) fn middle(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}
