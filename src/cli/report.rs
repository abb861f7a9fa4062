//! `infertune report`.

use std::path::PathBuf;

/// Arguments of `infertune report`.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// Study folder, e.g. `results/vllm`.
    pub study_dir: PathBuf,
}

/// Runs `infertune report`.
pub fn run(args: ReportArgs) -> anyhow::Result<i32> {
    let (md, html) = crate::study::export::write_report(&args.study_dir)?;
    println!("wrote {} and {}", md.display(), html.display());
    Ok(0)
}
