//! `infertune export`: writes best.sh / best.json and the deployment files for a study folder.

use crate::export::{Format, BEST_JSON, BEST_SH};
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
    /// Deployment files to write (repeatable; `all`: every one that applies to the study's
    /// engine). Without it: best.sh, best.json and every deployment file that applies.
    #[arg(long, value_enum)]
    pub format: Vec<FormatArg>,
}

/// `--format` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum FormatArg {
    /// vLLM: vllm-config.yaml for `vllm serve --config`, and vllm.env.
    VllmConfig,
    /// docker-run.sh: a `docker run` line of the engine's usual image.
    Docker,
    /// kubernetes.yaml: a Deployment and a Service.
    Kubernetes,
    /// SGLang: sglang-config.yaml for `launch_server --config`, and sglang.env.
    Sglang,
    /// Every format that applies to the study's engine.
    All,
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
    let engine = crate::engine::for_kind(space.engine.kind);
    let records = journal::read_records(dir)?;
    let exporter = Exporter::new(&space, engine, &meta, dir);
    let chosen: Option<Vec<Format>> =
        if args.format.is_empty() || args.format.contains(&FormatArg::All) {
            None
        } else {
            Some(args.format.iter().filter_map(|f| format_of(*f)).collect())
        };
    if args.format.is_empty() && exporter.write(&records)?.is_some() {
        println!("wrote {}", dir.join(BEST_SH).display());
        println!("wrote {}", dir.join(BEST_JSON).display());
    }
    match exporter.write_deploy(&records, chosen.as_deref())? {
        Some((w, written)) => {
            for path in written {
                println!("wrote {}", path.display());
            }
            eprintln!("exported trial {}", w.summary.number);
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

fn format_of(arg: FormatArg) -> Option<Format> {
    match arg {
        FormatArg::VllmConfig => Some(Format::VllmConfig),
        FormatArg::Docker => Some(Format::Docker),
        FormatArg::Kubernetes => Some(Format::Kubernetes),
        FormatArg::Sglang => Some(Format::Sglang),
        FormatArg::All => None,
    }
}
