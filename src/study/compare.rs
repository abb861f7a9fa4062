//! A study folder as `infertune compare` shows it: its winner as the study chooses it, and what
//! its trials cost; the engine version and card come from its `best.json` where it has one.

use super::journal;
use super::select::choose_winner;
use crate::record::Outcome;
use crate::report::compare::{Compared, ComparedWinner};
use std::path::Path;

/// The study in `dir`, read from its `study.json`, journal and `best.json`.
pub fn summarize(dir: &Path) -> anyhow::Result<Compared> {
    let meta = journal::load_meta(dir)?;
    let records = journal::read_records(dir)?;
    let winner = choose_winner(&records, meta.objective.direction).map(|w| ComparedWinner {
        trial: w.summary.number,
        params: w.summary.params.clone(),
        mean: w.summary.mean,
        ci95: w.summary.ci95,
        runs: w.summary.runs,
        baseline: w
            .baseline
            .as_ref()
            .map(|b| (b.mean, b.ci95, b.values.len())),
        gain: w.gain_pct.map(|g| (g, w.gain_ci95)),
    });
    let best: Option<serde_json::Value> =
        std::fs::read_to_string(dir.join(crate::export::BEST_JSON))
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok());
    let field = |pointer: &str| {
        best.as_ref()
            .and_then(|b| b.pointer(pointer))
            .and_then(|v| v.as_str())
            .map(String::from)
    };
    let engine = format!("{:?}", meta.engine).to_ascii_lowercase();
    let engine = match field("/engine/version") {
        Some(version) => format!("{engine} {version}"),
        None => engine,
    };
    let failures = records
        .iter()
        .filter(|r| {
            matches!(
                r.outcome,
                Outcome::Rejected { .. } | Outcome::Failed { .. } | Outcome::Crashed { .. }
            )
        })
        .count();
    Ok(Compared {
        name: meta.name.clone(),
        engine,
        card: field("/card"),
        objective: format!(
            "{} {}",
            meta.objective.direction.as_str(),
            meta.objective.metric
        ),
        winner,
        trials: records.len(),
        failures,
        trial_seconds: records.iter().map(|r| r.wall_s).sum(),
    })
}
