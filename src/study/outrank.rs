//! Cutting a screening run short once it can no longer go on to the full probe.
//!
//! A screening run goes on only when its score beats the rung's bar
//! ([`super::screening::promotion_bar`], known when the run starts). Where the objective is a
//! throughput of a request-bound probe, a run in progress can reach at most what all its
//! planned requests would give if they completed the moment after the check, every one at its
//! `max_tokens`: the run lasts at least the time elapsed. Once that bound is below the bar, the
//! rest of the probe cannot change the verdict and is saved. The run is recorded as pruned
//! with what it measured so far, so it still counts in the rung and the sampler learns from it.
//! A screening run that is the first part of the full probe is bounded the same way up to its
//! checkpoint, by its share of the planned requests; past it, the full probe runs unbounded.

use crate::probe::LiveStats;
use crate::record::OUTRANKED;
use crate::space::objective::{Direction, ObjectiveSpec};

/// The score a screening run must beat, on a metric a run in progress can bound.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Bar {
    metric: Bounded,
    score: f64,
    /// Measured requests at the checkpoint the run is judged at (`None`: its end).
    checkpoint: Option<u64>,
}

/// A throughput metric and what it counts.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Bounded {
    /// `output_throughput`: output tokens per second.
    OutputTokens,
    /// `request_throughput`: completed requests per second.
    Requests,
}

impl Bounded {
    /// The metric's name in probe results and objectives.
    fn name(self) -> &'static str {
        match self {
            Bounded::OutputTokens => "output_throughput",
            Bounded::Requests => "request_throughput",
        }
    }
}

impl Bar {
    /// The bar `score` of `objective`; `None` where the objective is not a maximised output or
    /// request throughput, whose final value a run in progress cannot bound.
    pub(crate) fn of(objective: &ObjectiveSpec, score: f64) -> Option<Bar> {
        if objective.direction != Direction::Maximize || objective.load_search.is_some() {
            return None;
        }
        let metric = [Bounded::OutputTokens, Bounded::Requests]
            .into_iter()
            .find(|m| m.name() == objective.metric.trim())?;
        (score.is_finite() && score > 0.0).then_some(Bar {
            metric,
            score,
            checkpoint: None,
        })
    }

    /// This bar for a run judged at its checkpoint after `after` measured requests.
    pub(crate) fn at_checkpoint(self, after: u64) -> Bar {
        Bar {
            checkpoint: Some(after),
            ..self
        }
    }

    /// A bar of `score` on the maximised `metric` (`None` as in [`Bar::of`]).
    #[cfg(test)]
    pub(crate) fn maximised(metric: &str, score: f64) -> Option<Bar> {
        let objective = ObjectiveSpec {
            direction: Direction::Maximize,
            metric: metric.into(),
            subject_to: Vec::new(),
            secondary: None,
            load_search: None,
        };
        Bar::of(&objective, score)
    }

    /// Why the run of `stats` can no longer beat the bar, or `None` while it still might (or
    /// the run is duration-bound, or past its checkpoint).
    pub(crate) fn outranked(&self, stats: &LiveStats) -> Option<String> {
        let planned = match self.metric {
            Bounded::OutputTokens => stats.planned_output_tokens,
            Bounded::Requests => stats.planned,
        } as f64;
        let share = match self.checkpoint {
            Some(after) if stats.finished >= after => return None,
            Some(after) => after as f64 / stats.planned.max(1) as f64,
            None => 1.0,
        };
        let planned = planned * share.min(1.0);
        let elapsed = stats.elapsed.as_secs_f64();
        (planned > 0.0 && elapsed > 0.0 && planned / elapsed < self.score)
            .then(|| self.reason(planned, elapsed))
    }

    /// When a run whose planned requests add up to `planned` units (output tokens or requests)
    /// can no longer beat the bar: the seconds after which it is cut, and why.
    pub(crate) fn cut_after(&self, planned: f64) -> Option<(f64, String)> {
        let seconds = planned / self.score;
        (seconds.is_finite() && seconds > 0.0).then(|| (seconds, self.reason(planned, seconds)))
    }

    fn reason(&self, planned: f64, elapsed: f64) -> String {
        format!(
            "{OUTRANKED}: {} can reach at most {:.1} after {elapsed:.1} s, below \
             the {:.1} it needs to go on to the full probe",
            self.metric.name(),
            planned / elapsed,
            self.score
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn stats(planned: u64, tokens: u64, elapsed_s: f64) -> LiveStats {
        LiveStats {
            planned,
            planned_output_tokens: tokens,
            elapsed: Duration::from_secs_f64(elapsed_s),
            ..LiveStats::default()
        }
    }

    #[test]
    fn a_run_is_outranked_once_all_its_tokens_at_once_would_fall_short() {
        let bar = Bar::maximised("output_throughput", 1000.0).unwrap();
        // 10 000 tokens planned: at most 1000 tok/s until 10 s have passed.
        assert_eq!(bar.outranked(&stats(40, 10_000, 9.9)), None);
        let why = bar.outranked(&stats(40, 10_000, 10.5)).unwrap();
        assert!(why.contains("at most 952.4 after 10.5 s"), "{why}");
        let requests = Bar::maximised("request_throughput", 4.0).unwrap();
        assert_eq!(requests.outranked(&stats(40, 10_000, 9.9)), None);
        assert!(requests.outranked(&stats(40, 10_000, 10.1)).is_some());
    }

    #[test]
    fn a_run_with_a_checkpoint_is_bounded_by_its_share_until_it_reaches_it() {
        // 40 requests planned, judged after 10: a quarter of 10 000 tokens, so at most
        // 1000 tok/s until 2.5 s have passed.
        let bar = Bar::maximised("output_throughput", 1000.0)
            .unwrap()
            .at_checkpoint(10);
        assert_eq!(bar.outranked(&stats(40, 10_000, 2.4)), None);
        assert!(bar.outranked(&stats(40, 10_000, 2.6)).is_some());
        let past = LiveStats {
            finished: 10,
            ..stats(40, 10_000, 60.0)
        };
        assert_eq!(bar.outranked(&past), None, "the full probe runs unbounded");
    }

    #[test]
    fn nothing_is_bounded_without_planned_requests_or_a_bounded_objective() {
        let bar = Bar::maximised("output_throughput", 1000.0).unwrap();
        assert_eq!(bar.outranked(&stats(0, 0, 600.0)), None, "duration-bound");
        for metric in ["goodput", "p99_ttft_ms", "output_throughput / 2"] {
            assert_eq!(Bar::maximised(metric, 1000.0), None, "{metric}");
        }
        let minimised = ObjectiveSpec {
            direction: Direction::Minimize,
            metric: "output_throughput".into(),
            subject_to: Vec::new(),
            secondary: None,
            load_search: None,
        };
        assert_eq!(Bar::of(&minimised, 1000.0), None);
        assert_eq!(Bar::maximised("output_throughput", 0.0), None);
    }
}
