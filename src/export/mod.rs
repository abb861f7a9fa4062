//! Exports of a study, one file per format: `best.sh`, `best.json`, `config.patch.json` (MindIE),
//! `trials.csv`, the report's `report.md`, `report.html` and `plots/*.svg`, and the deployment
//! formats (see [`Format`]): `vllm-config.yaml` + `vllm.env`, `sglang-config.yaml` +
//! `sglang.env`, `docker-run.sh`, `kubernetes.yaml`.
//!
//! Every export is built from what is in memory (the records, the study's facts, the winner and
//! its launch), never from a file read back. The study chooses the winner and hands it over as a
//! [`WinnerFacts`], so nothing here depends on `study`.

mod best_json;
mod best_sh;
mod config_patch;
mod deploy;
mod docker;
mod document;
mod engine_config;
mod env_file;
mod figures;
mod flag_yaml;
mod html;
mod kubernetes;
mod markdown;
mod sglang_config;
mod svg;
mod trials_csv;
mod vllm_config;

pub(crate) use best_sh::exec_line;
pub use deploy::{Format, Pinning, WinnerLaunch};
pub(crate) use document::Block;
pub(crate) use figures::mean_text;
pub use figures::{gain_text, gain_verdict, resolution_text, tied_text};
pub(crate) use svg::{Chart, Series};
pub use trials_csv::{detail, status};

use crate::launch::LaunchSpec;
use crate::record::TrialRecord;
use crate::space::objective::ObjectiveSpec;
use crate::space::{EngineKind, StudySpec, VerdictTarget};
use crate::util::atomic::{write_atomic, write_executable, Access};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The winner's launch script.
pub const BEST_SH: &str = "best.sh";
/// The winner's facts.
pub const BEST_JSON: &str = "best.json";
/// MindIE: the winner's params as a nested patch of `config.json`.
pub(crate) const CONFIG_PATCH: &str = "config.patch.json";
/// Every trial, one CSV row each.
pub(crate) const TRIALS_CSV: &str = "trials.csv";
/// The report in Markdown.
pub(crate) const REPORT_MD: &str = "report.md";
/// The report as a standalone HTML page.
pub(crate) const REPORT_HTML: &str = "report.html";
/// Folder of the report's SVG plots.
pub(crate) const PLOTS_DIR: &str = "plots";

/// What a study is: the facts its `study.json` keeps.
#[derive(Clone, Copy, Debug)]
pub struct StudyFacts<'a> {
    /// Study name (the folder name).
    pub name: &'a str,
    /// Engine driven.
    pub engine: EngineKind,
    /// Sampler name.
    pub sampler: &'a str,
    /// Sampler seed.
    pub seed: u64,
    /// The objective and its SLOs.
    pub objective: &'a ObjectiveSpec,
    /// The earlier studies whose trials seeded the sampler (a warm start).
    pub warm_start: &'a [ReusedStudy],
    /// How well the study's verdict was to know the gain; `None` when it ran no repeats, or
    /// was written before the target was recorded.
    pub verdict: Option<VerdictTarget>,
}

/// An earlier study whose trials seeded the sampler, and what was taken from it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ReusedStudy {
    /// The study folder.
    pub study: String,
    /// How many records of its journal were read (a resumed study reads the same ones).
    pub read: usize,
    /// How many of them seeded the sampler.
    pub reused: usize,
    /// How many were left out: their parameters do not match this study's.
    pub dropped: usize,
    /// How many of the reused trials failed to start (regions the sampler then avoids).
    pub failures: usize,
    /// Transfer weight in `(0, 1]`.
    pub weight: f64,
}

/// The winning config as the study chose it: its trial and the statistics of its runs.
#[derive(Clone, Debug)]
pub struct WinnerFacts<'a> {
    /// The winner's original trial (its params and metrics).
    pub record: &'a TrialRecord,
    /// Objective values of its probed runs: the trial and its re-validation repeats.
    pub values: Vec<f64>,
    /// Runs in total.
    pub runs: usize,
    /// Mean objective value.
    pub mean: f64,
    /// Half-width of the 95% confidence interval of the mean; `None` from a single run.
    pub ci95: Option<f64>,
    /// Trial numbers of its runs: the trial, then its repeats.
    pub trials: Vec<u32>,
    /// Every metric over the runs that measured it.
    pub metrics: BTreeMap<String, Stat>,
    /// The baseline, when it ran and met every SLO.
    pub baseline: Option<Baseline>,
    /// Gain over the baseline in percent, in the objective's favourable direction.
    pub gain_pct: Option<f64>,
    /// Half-width of the gain's 95% confidence interval in percentage points; `None` unless
    /// the winner and the baseline both ran at least twice.
    pub gain_ci95: Option<f64>,
    /// Trial numbers of the finalists the runs cannot tell from the winner.
    pub tied: Vec<u32>,
}

/// A quantity measured over a config's runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Stat {
    /// Mean over the runs.
    pub mean: f64,
    /// Half-width of the 95% confidence interval of the mean; `None` from a single run.
    pub ci95: Option<f64>,
    /// Runs that measured it.
    pub runs: usize,
}

/// The engine-default baseline, as the winner is compared with it.
#[derive(Clone, Debug)]
pub struct Baseline {
    /// Its trial number.
    pub trial: u32,
    /// Mean objective value.
    pub mean: f64,
    /// Half-width of the 95% confidence interval of the mean; `None` from a single run.
    pub ci95: Option<f64>,
    /// Runs its mean is over.
    pub runs: usize,
}

/// The winner and how it starts: what `best.sh`, `best.json` and the MindIE patch are built from.
#[derive(Clone, Copy, Debug)]
pub struct Best<'a> {
    /// The study.
    pub study: StudyFacts<'a>,
    /// Its space: engine facts and the parameters' config targets.
    pub space: &'a StudySpec,
    /// The winner.
    pub winner: &'a WinnerFacts<'a>,
    /// The winner's launch, rebuilt from the space.
    pub launch: &'a LaunchSpec,
    /// The engine's version, when known.
    pub version: Option<&'a str>,
    /// Where the winner was tuned when not on the engine itself (a simulator study's line).
    pub tuned_on: Option<&'a str>,
}

/// Write `trials.csv` of `records` into `dir`.
pub(crate) fn write_trials_csv(
    dir: &Path,
    records: &[TrialRecord],
    access: Access,
) -> anyhow::Result<()> {
    write_atomic(&dir.join(TRIALS_CSV), &trials_csv::render(records)?, access)
}

/// Write `best.sh`, `best.json` and, for MindIE, `config.patch.json` of `best` into `dir`; no
/// secret of the space is written (see [`crate::space::redact`] and `best.sh`'s variable references).
pub(crate) fn write_best(dir: &Path, best: &Best<'_>) -> anyhow::Result<()> {
    let access = best.space.file_access();
    write_executable(&dir.join(BEST_SH), &best_sh::render(best)?, access)?;
    let json = best_json::render(best);
    write_atomic(
        &dir.join(BEST_JSON),
        &serde_json::to_string_pretty(&json)?,
        access,
    )?;
    if best.space.engine.kind == EngineKind::Mindie {
        let patch = config_patch::render(best.space, &best.winner.record.params);
        write_atomic(
            &dir.join(CONFIG_PATCH),
            &serde_json::to_string_pretty(&patch)?,
            access,
        )?;
    }
    Ok(())
}

/// Write the files of `formats` for `best` deployed as `deployment` into `dir`; returns their
/// paths. A format that does not apply to the study's engine is an error naming those that do.
pub(crate) fn write_deploy(
    dir: &Path,
    best: &Best<'_>,
    deployment: &WinnerLaunch,
    formats: &[Format],
) -> anyhow::Result<Vec<PathBuf>> {
    let engine = best.space.engine.kind;
    let has_image = deployment.image.is_some();
    if let Some(format) = formats.iter().find(|f| !f.applies_to(engine, has_image)) {
        let fitting: Vec<&str> = Format::ALL
            .iter()
            .filter(|f| f.applies_to(engine, has_image))
            .map(|f| f.name())
            .collect();
        anyhow::bail!(
            "--format {} does not apply to a {} study; formats that do: {}",
            format.name(),
            engine,
            if fitting.is_empty() {
                "none".to_string()
            } else {
                fitting.join(", ")
            }
        );
    }
    if formats.is_empty() {
        return Ok(Vec::new());
    }
    let server = deploy::Server::new(best, deployment)?;
    let access = best.space.file_access();
    let mut written = Vec::new();
    let mut write = |name: &str, text: &str, executable: bool| -> anyhow::Result<()> {
        let path = dir.join(name);
        if executable {
            write_executable(&path, text, access)?;
        } else {
            write_atomic(&path, text, access)?;
        }
        written.push(path);
        Ok(())
    };
    for format in formats {
        match format {
            Format::VllmConfig => {
                let files = vllm_config::render(&server)?;
                write(vllm_config::CONFIG, &files.yaml, false)?;
                write(vllm_config::ENV, &files.env, false)?;
            }
            Format::Sglang => {
                let files = sglang_config::render(&server)?;
                write(sglang_config::CONFIG, &files.yaml, false)?;
                write(sglang_config::ENV, &files.env, false)?;
            }
            Format::Docker => write(docker::FILE, &docker::render(&server)?, true)?,
            Format::Kubernetes => write(kubernetes::FILE, &kubernetes::render(&server)?, false)?,
        }
    }
    Ok(written)
}

/// Write the report of `blocks` into `dir`: `plots/*.svg`, `report.md` and `report.html` (titled
/// `title`) with `access`; returns the paths of the two reports.
pub(crate) fn write_report(
    dir: &Path,
    title: &str,
    blocks: &[Block],
    access: Access,
) -> anyhow::Result<(PathBuf, PathBuf)> {
    let plots = dir.join(PLOTS_DIR);
    access.create_dir(&plots)?;
    for b in blocks {
        if let Block::Plot { file, svg, .. } = b {
            write_atomic(&plots.join(file), svg, access)?;
        }
    }
    let md = dir.join(REPORT_MD);
    let html = dir.join(REPORT_HTML);
    write_atomic(&md, &markdown::render(blocks), access)?;
    write_atomic(&html, &html::render(title, blocks), access)?;
    Ok((md, html))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_format_escapes_its_own_markup_in_tables() {
        let blocks = vec![
            Block::Heading(2, "T".into()),
            Block::Table {
                header: vec!["a".into(), "b".into()],
                rows: vec![vec!["x|y".into(), "<z>".into()]],
            },
        ];
        let md = markdown::render(&blocks);
        assert!(
            md.contains("## T\n") && md.contains("| x\\|y | <z> |"),
            "{md}"
        );
        let h = html::render("t", &blocks);
        assert!(
            h.contains("<td>&lt;z&gt;</td>") && h.contains("<h2>T</h2>"),
            "{h}"
        );
    }

    #[test]
    fn concurrent_writes_of_files_sharing_a_stem_keep_their_own_text() {
        let dir = tempfile::tempdir().unwrap();
        let writer = |name: &'static str| {
            let path = dir.path().join(name);
            move || {
                for i in 0..300 {
                    write_atomic(&path, &format!("{name} {i}"), Access::Shared).unwrap();
                }
            }
        };
        std::thread::scope(|s| {
            s.spawn(writer(BEST_SH));
            s.spawn(writer(BEST_JSON));
        });
        for name in [BEST_SH, BEST_JSON] {
            let text = std::fs::read_to_string(dir.path().join(name)).unwrap();
            assert_eq!(text, format!("{name} 299"));
        }
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 2, "no temporary file is left behind");
    }
}
