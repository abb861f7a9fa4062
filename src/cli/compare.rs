//! `infertune compare`: several studies side by side (winners, gains, costs) as a table on the
//! terminal and an HTML page.

use crate::report::compare;
use comfy_table::{presets::UTF8_FULL_CONDENSED, ContentArrangement, Table};
use std::path::PathBuf;

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
        .map(|dir| crate::study::compare::summarize(dir))
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
