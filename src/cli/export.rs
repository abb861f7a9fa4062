//! `infertune export`: writes best.sh / best.json for a study folder.

use crate::export::{BEST_JSON, BEST_SH};
use crate::space::StudySpec;
use crate::study::export::Exporter;
use crate::study::{journal, lock};
use anyhow::Context as _;
use std::path::PathBuf;

/// Arguments of `infertune export`.
#[derive(clap::Args, Debug)]
pub(crate) struct ExportArgs {
    /// Study folder, e.g. `results/vllm`.
    pub study_dir: PathBuf,
}

/// Runs `infertune export`.
pub fn run(args: ExportArgs) -> anyhow::Result<i32> {
    let dir = &args.study_dir;
    let meta = journal::load_meta(dir)?;
    let _lock = lock::acquire_shared(dir)?;
    let space = StudySpec::load(
        std::path::Path::new(&meta.space_origin),
        crate::engine::rule_pack,
    )
    .context("export rebuilds the winner's launch from the study's space file")?;
    let engine = crate::engine::for_kind(space.engine.kind)?;
    let records = journal::read_records(dir)?;
    let exporter = Exporter::new(&space, engine.as_ref(), &meta, dir);
    match exporter.write(&records)? {
        Some(w) => {
            println!(
                "wrote {} and {} for trial {}",
                dir.join(BEST_SH).display(),
                dir.join(BEST_JSON).display(),
                w.summary.number
            );
            Ok(0)
        }
        None => {
            eprintln!(
                "{}: no trial met every SLO; nothing to export",
                dir.display()
            );
            Ok(1)
        }
    }
}
