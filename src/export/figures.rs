//! How the exports print a measured mean and a gain: with its 95% confidence interval when one
//! exists, and as `n = 1` (no interval) when the figure comes from a single run.

use crate::record::MIN_GAIN;
use crate::space::VerdictTarget;

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

/// [`MIN_GAIN`] in percent of the defaults' mean.
const MIN_GAIN_PCT: f64 = MIN_GAIN * 100.0;

/// What the gain means, in words: the defaults themselves won; the gain's 95% interval rules out
/// a gain of `MIN_GAIN_PCT` (tuning did not help); or it includes zero (could not tell, at
/// its half-width in percent of the defaults' mean). `None` when the gain is real or, measured
/// once each, has no interval.
pub fn gain_verdict(winner_is_baseline: bool, gain_pct: f64, ci95: Option<f64>) -> Option<String> {
    if winner_is_baseline {
        return Some("Tuning did not help here: no config measured beat the defaults.".into());
    }
    let ci = ci95?;
    if gain_pct + ci < MIN_GAIN_PCT {
        return Some(format!(
            "Tuning did not help here: the gain's 95% CI ({gain_pct:+.1}% ± {ci:.1}%) rules out \
             a gain of {MIN_GAIN_PCT:.0}% or more over the defaults."
        ));
    }
    (gain_pct - ci <= 0.0).then(|| {
        format!(
            "Could not tell: ±{ci:.1}% (the gain's 95% CI, {gain_pct:+.1}%, includes zero and a \
             gain of {MIN_GAIN_PCT:.0}% or more; more runs of each would narrow it)."
        )
    })
}

/// The finalists the runs cannot tell from the winner, in words; `None` when there is none.
pub fn tied_text(tied: &[u32]) -> Option<String> {
    let names: Vec<String> = tied.iter().map(|n| format!("trial {n}")).collect();
    (!names.is_empty()).then(|| {
        format!(
            "At the measured noise the runs cannot tell the winner from {}: the 95% CI of the \
             difference of their means includes zero.",
            names.join(", ")
        )
    })
}

/// Why the gain's 95% interval (`ci95`, in points) is still wider than the verdict's `target`,
/// in words: the winner or the baseline ran its most runs (their spread is too wide for the
/// target), or neither did (the study ended first: its budget, or a stop). `None` when the
/// interval is within the target, when there is no target or interval, or when the defaults
/// themselves won.
pub fn resolution_text(
    target: Option<VerdictTarget>,
    winner_is_baseline: bool,
    ci95: Option<f64>,
    winner_runs: usize,
    baseline_runs: usize,
) -> Option<String> {
    let (target, ci95) = target.zip(ci95)?;
    if winner_is_baseline || ci95 <= target.half_width_pct {
        return None;
    }
    let most = target.most_runs();
    let wider = format!(
        "The gain is known to ±{ci95:.1} points, not the ±{:.0} of search.resolution:",
        target.half_width_pct
    );
    let ran_out = match (winner_runs >= most, baseline_runs >= most) {
        (true, true) => "the winner and the baseline",
        (true, false) => "the winner",
        (false, true) => "the baseline",
        (false, false) => {
            return Some(format!(
                "{wider} the study ended (its budget, or a stop) before the winner and the \
                 baseline ran their most repeats (search.max_repeats {}); resuming it with a \
                 longer --budget would narrow it.",
                target.max_repeats
            ))
        }
    };
    Some(format!(
        "{wider} {ran_out} ran {most} times (search.max_repeats {} and the first run) and still \
         spread too widely; a larger search.max_repeats, or a probe.precision that narrows each \
         run, would narrow it.",
        target.max_repeats
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn did_not_help_only_when_the_interval_rules_out_a_gain_else_could_not_tell() {
        let wide = gain_verdict(false, 6.5, Some(28.0)).unwrap();
        assert!(wide.starts_with("Could not tell: ±28.0%"), "{wide}");
        let narrow = gain_verdict(false, 1.0, Some(2.5)).unwrap();
        assert!(
            narrow.contains("did not help") && narrow.contains("rules out a gain of 5%"),
            "{narrow}"
        );
        let edge = gain_verdict(false, 2.0, Some(4.0)).unwrap();
        assert!(edge.starts_with("Could not tell"), "-2% to +6%: {edge}");
        assert!(gain_verdict(true, 0.0, None)
            .unwrap()
            .contains("beat the defaults"));
        assert_eq!(gain_verdict(false, 12.2, Some(4.5)), None, "a real gain");
        assert_eq!(
            gain_verdict(false, 3.0, None),
            None,
            "one run each: no verdict"
        );
    }

    #[test]
    fn finalists_the_runs_cannot_tell_apart_are_named() {
        let said = tied_text(&[3, 7]).unwrap();
        assert!(said.contains("trial 3, trial 7"), "{said}");
        assert_eq!(tied_text(&[]), None);
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

    #[test]
    fn a_gain_known_less_well_than_the_target_says_why() {
        let target = VerdictTarget {
            half_width_pct: 10.0,
            max_repeats: 6,
        };
        assert_eq!(
            resolution_text(Some(target), false, Some(9.2), 6, 6),
            None,
            "within the target"
        );
        let spread = resolution_text(Some(target), false, Some(14.7), 5, 7).unwrap();
        assert!(
            spread.contains("±14.7 points") && spread.contains("the baseline ran 7 times"),
            "{spread}"
        );
        let both = resolution_text(Some(target), false, Some(14.7), 7, 7).unwrap();
        assert!(both.contains("the winner and the baseline ran 7"), "{both}");
        let ended = resolution_text(Some(target), false, Some(12.0), 4, 4).unwrap();
        assert!(
            ended.contains("the study ended") && ended.contains("--budget"),
            "{ended}"
        );
    }
}
