//! `infertune report`.

use std::path::PathBuf;

/// Arguments of `infertune report`.
#[derive(clap::Args, Debug)]
pub(crate) struct ReportArgs {
    /// Study folder, e.g. `results/vllm`.
    pub study_dir: PathBuf,
}

/// Runs `infertune report`.
pub fn run(args: ReportArgs) -> anyhow::Result<i32> {
    let written = crate::study::export::write_report(&args.study_dir)?;
    if let Some(note) = &written.note {
        eprintln!("note: {note}");
    }
    println!(
        "wrote {} and {}",
        written.markdown.display(),
        written.html.display()
    );
    Ok(0)
}
