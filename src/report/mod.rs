//! Study reports: what `report.md` and `report.html` say (summary, winner and its gain over the
//! baseline, why it wins by the server's own figures, plots with parameter importance, failures by kind, every trial), built from the study in memory; `export`
//! writes the files. [`sweep`] says what a load sweep's report says.

pub mod compare;
mod content;
mod importance;
mod plots;
mod slots;
pub mod sweep;
mod why;

use crate::export::{StudyFacts, WinnerFacts};
use crate::record::TrialRecord;
use crate::util::atomic::Access;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Everything a report shows about one study.
pub struct StudyView<'a> {
    /// The study.
    pub study: StudyFacts<'a>,
    /// Journal records.
    pub records: &'a [TrialRecord],
    /// The winner, if any trial met every SLO.
    pub winner: Option<WinnerFacts<'a>>,
    /// The winner's launch line, as `best.sh` runs it.
    pub command: Option<String>,
    /// The second objective's value by trial number, where one is set and computable.
    pub secondary: BTreeMap<u32, f64>,
    /// The objective's value that pruned trials measured before their probe was stopped, by
    /// trial number.
    pub partial: BTreeMap<u32, f64>,
    /// How the sampler weighs the warm start's trials against the study's own, where it has one.
    pub warm_start_trust: Option<String>,
    /// The twin's predictions of the trials, where the study's prior is the twin.
    pub twin: Option<TwinPredictions>,
    /// The relative standard deviation between runs of one config, each on a new start of the
    /// server; `None` until some config ran twice.
    pub between_starts: Option<f64>,
}

/// The twin's prediction of each scored trial's objective against what the trial measured.
#[derive(Clone, Debug, PartialEq)]
pub struct TwinPredictions {
    /// `(trial number, predicted, measured)`, in trial order.
    pub rows: Vec<(u32, f64, f64)>,
    /// Median absolute error of the predictions, percent.
    pub median_error_pct: f64,
    /// Median error above which the report says the twin is wrong here.
    pub wrong_above_pct: f64,
    /// The card's speed multipliers `[compute, bandwidth, host]` fitted to the trials'
    /// throughput and latencies, and the median error of those figures after the fit, percent.
    pub calibrated: Option<([f64; 3], f64)>,
}

/// Write `report.md`, `report.html` and `plots/*.svg` of `view` into `dir`; returns the paths of
/// the two reports, readable as `access` says.
pub fn write(
    dir: &Path,
    view: &StudyView<'_>,
    access: Access,
) -> anyhow::Result<(PathBuf, PathBuf)> {
    let title = format!("infertune study {}", view.study.name);
    crate::export::write_report(dir, &title, &content::blocks(view), access)
}
