//! How the exports print a measured mean and a gain: with its 95% confidence interval when one
//! exists, and as `n = 1` (no interval) when the figure comes from a single run.

/// `12.00 ± 0.50 (95% CI, n = 3)`, or `12.00 (n = 1)` without an interval.
pub(crate) fn mean_text(mean: f64, ci95: Option<f64>, runs: usize) -> String {
    match ci95 {
        Some(ci) => format!("{mean:.2} ± {ci:.2} (95% CI, n = {runs})"),
        None => format!("{mean:.2} (n = {runs})"),
    }
}

/// `+12.3% ± 4.1% (95% CI)`, or `+12.3%` without an interval.
pub fn gain_text(gain_pct: f64, ci95: Option<f64>) -> String {
    match ci95 {
        Some(ci) => format!("{gain_pct:+.1}% ± {ci:.1}% (95% CI)"),
        None => format!("{gain_pct:+.1}%"),
    }
}

/// What the gain means, in words, when tuning did not help: the defaults themselves won, or
/// the winner's gain is within its 95% confidence interval of zero. `None` when the gain is
/// real or, measured once each, cannot be judged.
pub fn no_gain_text(winner_is_baseline: bool, gain_pct: f64, ci95: Option<f64>) -> Option<String> {
    if winner_is_baseline {
        return Some("Tuning did not help here: no config measured beat the defaults.".into());
    }
    let ci = ci95?;
    (gain_pct.abs() <= ci).then(|| {
        format!(
            "Tuning did not help here: the defaults are within the run-to-run noise of the best \
             config measured (gain {gain_pct:+.1}%, its 95% CI of ±{ci:.1}% includes zero)."
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gain_within_its_interval_or_the_defaults_winning_is_no_gain() {
        let said = no_gain_text(false, 6.5, Some(28.0)).unwrap();
        assert!(
            said.contains("did not help") && said.contains("+6.5%"),
            "{said}"
        );
        assert!(no_gain_text(true, 0.0, None)
            .unwrap()
            .contains("beat the defaults"));
        assert_eq!(no_gain_text(false, 12.2, Some(4.5)), None);
        assert_eq!(
            no_gain_text(false, 3.0, None),
            None,
            "one run each: no verdict"
        );
    }

    #[test]
    fn a_single_run_is_shown_as_n_1_never_with_a_zero_interval() {
        assert_eq!(mean_text(5224.0, None, 1), "5224.00 (n = 1)");
        assert_eq!(
            mean_text(5083.0, Some(543.5), 3),
            "5083.00 ± 543.50 (95% CI, n = 3)"
        );
        assert_eq!(gain_text(12.34, Some(4.06)), "+12.3% ± 4.1% (95% CI)");
        assert_eq!(gain_text(-3.0, None), "-3.0%");
    }
}
