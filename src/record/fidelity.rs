//! Screening runs against the full-probe runs of the same configs.

use super::TrialRecord;

/// How much higher `measure` reads on a config's full-probe run than on its screening run: the
/// median over the configs of `records` promoted from screening to the full probe; 0 before
/// any.
pub fn promotion_gap(
    records: &[TrialRecord],
    measure: impl Fn(&TrialRecord) -> Option<f64>,
) -> f64 {
    let mut gaps: Vec<f64> = records
        .iter()
        .filter(|full| full.is_full_probe())
        .filter_map(|full| {
            let from = full.promoted_from?;
            let screened = records.iter().find(|r| r.number == from)?;
            Some(measure(full)? - measure(screened)?)
        })
        .filter(|gap| gap.is_finite())
        .collect();
    gaps.sort_by(f64::total_cmp);
    gaps.get(gaps.len() / 2).copied().unwrap_or(0.0)
}
