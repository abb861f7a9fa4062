//! How `infertune tune` shows a study: a bar with ETA on a terminal, one line per trial always,
//! and its notes and warnings (above the bar when there is one).

use crate::exec::TrialObserver;
use crate::export::{detail, status};
use crate::record::Outcome;
use crate::study::observer::{EarlyEnd, Phase, StudyObserver, TrialProgress};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal as _;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// Reports a study trial by trial on stderr; shared with the launcher for its warnings.
#[derive(Default)]
pub(crate) struct TuneProgress {
    bar: Mutex<Option<ProgressBar>>,
}

impl TuneProgress {
    /// Print one line (above the bar when there is one).
    fn line(&self, text: &str) {
        match &*self.lock() {
            Some(bar) => bar.println(text),
            None => eprintln!("{text}"),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<ProgressBar>> {
        self.bar.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl TrialObserver for TuneProgress {
    fn note(&self, text: &str) {
        self.line(&format!("note: {text}"));
    }

    fn warning(&self, text: &str) {
        self.line(&format!("warning: {text}"));
    }
}

impl StudyObserver for TuneProgress {
    fn started(&self, planned: u32, done: u32) {
        if !std::io::stderr().is_terminal() {
            return;
        }
        let bar = ProgressBar::new(u64::from(planned));
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} trials {pos}/{len} [{elapsed_precise}] ETA {eta} {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_position(u64::from(done));
        bar.reset_eta();
        bar.enable_steady_tick(Duration::from_millis(500));
        *self.lock() = Some(bar);
    }

    fn trial(&self, progress: &TrialProgress<'_>) {
        self.line(&describe(progress));
        if let Some(bar) = &*self.lock() {
            let r = progress.record;
            if r.repeat_of().is_none() {
                bar.inc(1);
            }
            let metric = progress.metric;
            let mut msg = progress
                .best
                .map(|b| format!("best {metric}={b:.2}"))
                .unwrap_or_default();
            if let Some(left) = progress.budget_left {
                msg.push_str(&format!(
                    " budget left {}",
                    humantime::format_duration(Duration::from_secs(left.as_secs()))
                ));
            }
            bar.set_message(msg);
        }
    }

    fn ended_early(&self, why: &EarlyEnd) {
        self.line(&match why {
            EarlyEnd::BudgetSpent(Phase::Search) => "time budget spent: ending the search".into(),
            EarlyEnd::BudgetSpent(Phase::Revalidation) => {
                "time budget spent: ending the re-validation".into()
            }
            EarlyEnd::SamplerFailed(error) => format!("sampler: {error}; ending the search"),
        });
    }

    fn finished(&self) {
        if let Some(bar) = self.lock().take() {
            bar.finish_and_clear();
        }
    }
}

/// One line about a trial, e.g. `trial 3 feasible output_throughput=1234.50 [max_num_seqs=64]`.
fn describe(progress: &TrialProgress<'_>) -> String {
    let (r, metric) = (progress.record, progress.metric);
    let params: Vec<String> = r.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let mut head = format!("trial {}", r.id.number);
    if r.is_baseline() {
        head.push_str(" (baseline)");
    }
    if let Some(of) = r.repeat_of() {
        head.push_str(&format!(" (repeat of {of})"));
    }
    let result = match (&r.outcome, r.value) {
        (Outcome::Feasible, Some(v)) => format!("{metric}={v:.2}"),
        (Outcome::Infeasible, v) => format!(
            "{}{}",
            v.map(|v| format!("{metric}={v:.2}, ")).unwrap_or_default(),
            r.violations_text()
        ),
        (outcome, _) => detail(outcome),
    };
    format!(
        "{head} {} {result} [{}]",
        status(&r.outcome),
        params.join(" ")
    )
}
