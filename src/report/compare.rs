//! What `infertune compare` says of several studies side by side (another engine, card or
//! version on the same workload): each one's winner, its gain over its engine defaults with
//! the 95% CIs, and what the study cost; a table and a plot of the winners against their
//! baselines.

use crate::export::{gain_text, mean_text, Block, Chart, Series};
use crate::record::Params;
use std::path::{Path, PathBuf};

/// One study as the comparison shows it.
#[derive(Clone, Debug)]
pub struct Compared {
    /// Study name.
    pub name: String,
    /// Engine (`vllm`, `mindie`, …), with its version when known.
    pub engine: String,
    /// Card, when the space names one.
    pub card: Option<String>,
    /// The objective: direction and metric, e.g. `maximize output_throughput`.
    pub objective: String,
    /// The winner, when a trial met every SLO.
    pub winner: Option<ComparedWinner>,
    /// Trials run (re-validation repeats included).
    pub trials: usize,
    /// Trials that never served (rejected, failed to start, crashed).
    pub failures: usize,
    /// Seconds the trials took, summed.
    pub trial_seconds: f64,
}

/// A study's winner with its figures.
#[derive(Clone, Debug)]
pub struct ComparedWinner {
    /// Its trial number.
    pub trial: u32,
    /// Its config.
    pub params: Params,
    /// Mean objective value, its CI half-width and runs.
    pub mean: f64,
    /// Half-width of the 95% CI of the mean.
    pub ci95: Option<f64>,
    /// Runs its mean is over.
    pub runs: usize,
    /// The engine defaults' mean, CI half-width and runs, when the baseline met every SLO.
    pub baseline: Option<(f64, Option<f64>, usize)>,
    /// Gain over the baseline in percent and its CI half-width.
    pub gain: Option<(f64, Option<f64>)>,
}

/// The comparison table: a header and one row a study.
pub fn table(studies: &[Compared]) -> (Vec<String>, Vec<Vec<String>>) {
    let header = [
        "study",
        "engine",
        "card",
        "objective",
        "winner",
        "engine defaults",
        "gain",
        "trials",
        "cost",
    ]
    .map(String::from)
    .to_vec();
    let rows = studies
        .iter()
        .map(|s| {
            let (winner, baseline, gain) = match &s.winner {
                Some(w) => (
                    format!("trial {}: {}", w.trial, mean_text(w.mean, w.ci95, w.runs)),
                    w.baseline
                        .map_or("—".into(), |(m, ci, n)| mean_text(m, ci, n)),
                    w.gain.map_or("—".into(), |(g, ci)| gain_text(g, ci)),
                ),
                None => ("no config met every SLO".into(), "—".into(), "—".into()),
            };
            vec![
                s.name.clone(),
                s.engine.clone(),
                s.card.clone().unwrap_or_else(|| "—".into()),
                s.objective.clone(),
                winner,
                baseline,
                gain,
                format!("{} ({} failed)", s.trials, s.failures),
                format!("{:.1} min of trials", s.trial_seconds / 60.0),
            ]
        })
        .collect();
    (header, rows)
}

/// The page's blocks: the table, the winners' configs and a plot of each study's winner and
/// baseline.
pub(crate) fn blocks(studies: &[Compared]) -> Vec<Block> {
    let (header, rows) = table(studies);
    let mut out = vec![
        Block::Heading(1, "infertune: studies compared".into()),
        Block::Para(
            "Each study's winner against its engine's defaults, measured on its own workload \
             and SLOs; figures are means with their 95% confidence intervals."
                .into(),
        ),
        Block::Table { header, rows },
    ];
    let objectives: Vec<&str> = studies.iter().map(|s| s.objective.as_str()).collect();
    if objectives.windows(2).any(|w| w[0] != w[1]) {
        out.push(Block::Para(format!(
            "The studies optimise different objectives ({}); compare their figures with care.",
            objectives.join(", ")
        )));
    }
    let categories: Vec<String> = studies.iter().map(|s| s.name.clone()).collect();
    let point = |i: usize, v: f64| (i as f64, v);
    let winners = studies
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.winner.as_ref().map(|w| point(i, w.mean)))
        .collect();
    let baselines = studies
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.winner.as_ref()?.baseline.map(|b| point(i, b.0)))
        .collect();
    let chart = Chart {
        title: "Winner and engine defaults".into(),
        x_label: "study".into(),
        y_label: studies
            .first()
            .map_or(String::new(), |s| s.objective.clone()),
        series: vec![
            Series {
                name: "winner".into(),
                color: "#1f77b4",
                points: winners,
                line: false,
                hollow: false,
            },
            Series {
                name: "engine defaults".into(),
                color: "#7f7f7f",
                points: baselines,
                line: false,
                hollow: true,
            },
        ],
        x_categories: categories,
        thresholds: vec![],
        bars: false,
    };
    out.push(Block::Plot {
        caption: "Each study's winner (filled) and its engine defaults (hollow)".into(),
        file: "winners.svg".into(),
        svg: chart.render(),
    });
    out.push(Block::Heading(2, "Winning configs".into()));
    for s in studies {
        if let Some(w) = &s.winner {
            let params: Vec<String> = w.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            out.push(Block::Para(format!(
                "{} (trial {}): {}",
                s.name,
                w.trial,
                params.join(" ")
            )));
        }
    }
    out
}

/// Write the comparison of `studies` into `dir` (`report.md`, `report.html`, `plots/`);
/// returns the HTML page's path.
pub fn write(dir: &Path, studies: &[Compared]) -> anyhow::Result<PathBuf> {
    crate::util::atomic::Access::Shared.create_dir(dir)?;
    let (_, html) = crate::export::write_report(
        dir,
        "infertune: studies compared",
        &blocks(studies),
        crate::util::atomic::Access::Shared,
    )?;
    Ok(html)
}
