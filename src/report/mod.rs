//! Study reports: `report.md` and `report.html` with hand-written SVG plots (`plots/*.svg`),
//! built from the journal, `study.json` and `best.sh` alone.

mod content;
pub mod document;
pub mod plots;
pub mod svg;

use crate::record::TrialRecord;
use crate::study::journal::{self, write_atomic, StudyMeta};
use crate::study::select::{choose_winner, Winner};
use anyhow::Context as _;
use std::path::{Path, PathBuf};

/// Everything a report shows about one study.
pub struct StudyView {
    /// Identity and objective.
    pub meta: StudyMeta,
    /// Journal records.
    pub records: Vec<TrialRecord>,
    /// The winner, if any trial met every SLO.
    pub winner: Option<Winner>,
    /// The winner's launch line from `best.sh`.
    pub command: Option<String>,
}

impl StudyView {
    /// Read the study in `dir`.
    pub fn load(dir: &Path) -> anyhow::Result<StudyView> {
        let meta = journal::load_meta(dir)?;
        let records = journal::read_records(dir)?;
        let winner = choose_winner(&records, meta.objective.direction);
        let command = std::fs::read_to_string(dir.join(crate::study::export::BEST_SH))
            .ok()
            .and_then(|t| {
                t.lines()
                    .rev()
                    .find(|l| l.starts_with("exec "))
                    .map(str::to_string)
            });
        Ok(StudyView {
            meta,
            records,
            winner,
            command,
        })
    }
}

/// Write `report.md`, `report.html` and `plots/*.svg` for the study in `dir`; returns the paths
/// of the two reports.
pub fn write(dir: &Path) -> anyhow::Result<(PathBuf, PathBuf)> {
    let view = StudyView::load(dir)?;
    let blocks = content::blocks(&view)?;
    let plots = dir.join("plots");
    std::fs::create_dir_all(&plots)
        .with_context(|| format!("cannot create {}", plots.display()))?;
    for b in &blocks {
        if let document::Block::Plot { file, svg, .. } = b {
            write_atomic(&plots.join(file), svg)?;
        }
    }
    let md = dir.join("report.md");
    let html = dir.join("report.html");
    write_atomic(&md, &document::markdown(&blocks))?;
    let title = format!("infertune study {}", view.meta.name);
    write_atomic(&html, &document::html(&title, &blocks))?;
    Ok((md, html))
}
