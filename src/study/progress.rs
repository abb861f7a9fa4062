//! Progress of a study: a bar with ETA on a TTY, one line per trial always.

use crate::export::{detail, status};
use crate::record::{Outcome, TrialRecord};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal as _;
use std::time::Duration;

/// Reports trial by trial on stderr.
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A reporter for a search of `total` trials, `done` of which are already in the journal.
    /// The bar appears only when `enabled` and stderr is a terminal.
    pub fn new(enabled: bool, total: u32, done: u32) -> Progress {
        let bar = (enabled && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new(u64::from(total));
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} trials {pos}/{len} [{elapsed_precise}] ETA {eta} {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar.set_position(u64::from(done));
            bar.reset_eta();
            bar.enable_steady_tick(Duration::from_millis(500));
            bar
        });
        Progress { bar }
    }

    /// Print one line (above the bar when there is one).
    pub fn line(&self, text: &str) {
        match &self.bar {
            Some(bar) => bar.println(text),
            None => eprintln!("{text}"),
        }
    }

    /// A search trial finished: print it and advance the bar; `best` is the best value so far.
    pub fn trial(
        &self,
        record: &TrialRecord,
        metric: &str,
        best: Option<f64>,
        budget_left: Option<Duration>,
    ) {
        self.line(&describe(record, metric));
        if let Some(bar) = &self.bar {
            if record.repeat_of.is_none() {
                bar.inc(1);
            }
            let mut msg = best
                .map(|b| format!("best {metric}={b:.2}"))
                .unwrap_or_default();
            if let Some(left) = budget_left {
                msg.push_str(&format!(
                    " budget left {}",
                    humantime::format_duration(Duration::from_secs(left.as_secs()))
                ));
            }
            bar.set_message(msg);
        }
    }

    /// Remove the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// One line about a trial, e.g. `trial 3 feasible output_throughput=1234.50 [max_num_seqs=64]`.
pub fn describe(r: &TrialRecord, metric: &str) -> String {
    let params: Vec<String> = r.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let mut head = format!("trial {}", r.number);
    if r.baseline {
        head.push_str(" (baseline)");
    }
    if let Some(of) = r.repeat_of {
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
