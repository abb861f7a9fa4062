//! `infertune compare`: several studies side by side (winners, gains, costs) as a table on the
//! terminal and an HTML page.

use crate::record::Outcome;
use crate::report::compare::{self, Compared, ComparedWinner};
use crate::score::select::choose_winner;
use crate::study::journal;
use comfy_table::{presets::UTF8_FULL_CONDENSED, ContentArrangement, Table};
use std::path::{Path, PathBuf};

/// Arguments of `infertune compare`.
#[derive(clap::Args, Debug)]
pub(crate) struct CompareArgs {
    /// Study folders, e.g. `results/vllm-h100 results/mindie-910b`.
    #[arg(required = true, num_args = 1..)]
    pub studies: Vec<PathBuf>,
    /// Folder the HTML page (`report.html`) and its Markdown are written to.
    #[arg(long, default_value = "results/compare")]
    pub out: PathBuf,
}

/// Runs `infertune compare`: exit code 0 when some study has a winner, 1 when none has.
pub fn run(args: CompareArgs) -> anyhow::Result<i32> {
    let studies = args
        .studies
        .iter()
        .map(|dir| summarize(dir))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let (header, rows) = compare::table(&studies);
    let mut table = Table::new();
    table
        .load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(140)
        .set_header(header);
    for row in rows {
        table.add_row(row);
    }
    println!("{table}");
    let html = compare::write(&args.out, &studies)?;
    println!("Page: {}", html.display());
    Ok(if studies.iter().any(|s| s.winner.is_some()) {
        0
    } else {
        1
    })
}

/// The study in `dir` as the comparison shows it (its winner as the study chooses it, what
/// its trials cost), read from its `study.json`, journal and `best.json`.
fn summarize(dir: &Path) -> anyhow::Result<Compared> {
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
