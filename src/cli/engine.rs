//! `infertune engine flags`: read an engine's own flag list into a catalogue (cached per
//! version, where `check` and `tune` find it), or read a captured help text.

use crate::engine::catalogue::{self, Catalogue, Takes};
use crate::space::{EngineKind, StudySpec};
use anyhow::{bail, Context as _};
use comfy_table::{presets::UTF8_FULL_CONDENSED, ContentArrangement, Table};
use std::path::{Path, PathBuf};

/// Subcommands of `infertune engine`.
#[derive(clap::Subcommand, Debug)]
pub(crate) enum EngineCommand {
    /// Read the engine's flag catalogue: from the installed engine a space launches (its
    /// `--help`; nothing is served), or from a help text captured earlier.
    Flags(FlagsArgs),
}

/// Arguments of `infertune engine flags`.
#[derive(clap::Args, Debug)]
pub(crate) struct FlagsArgs {
    /// Run the help of the engine this space launches (`vllm serve --help=all`,
    /// `python3 -m sglang.launch_server --help`, `llama-server --help`) and cache the
    /// catalogue for the version the engine reports.
    #[arg(long, conflicts_with = "help_text")]
    pub space: Option<PathBuf>,
    /// Read this captured help text instead (needs `--engine` and `--version`).
    #[arg(long, requires_all = ["engine", "version"])]
    pub help_text: Option<PathBuf>,
    /// The engine the help text is from: vllm, sglang or llamacpp.
    #[arg(long)]
    pub engine: Option<String>,
    /// The engine version the help text is from.
    #[arg(long)]
    pub version: Option<String>,
    /// The command that printed the help text (recorded as the catalogue's source).
    #[arg(long)]
    pub source: Option<String>,
    /// Also write the catalogue (JSON) here; into a folder as `<engine>-<version>.json`.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also write the help text the engine printed here; into a folder as
    /// `<engine>-<version>.help.txt`.
    #[arg(long)]
    pub save_help: Option<PathBuf>,
    /// Print every flag, not only the summary.
    #[arg(long)]
    pub all: bool,
}

/// Runs `infertune engine …`.
pub fn run(command: EngineCommand) -> anyhow::Result<i32> {
    let EngineCommand::Flags(args) = command;
    let catalogue = match (&args.space, &args.help_text) {
        (Some(space), _) => installed(space, &args)?,
        (None, Some(file)) => captured(file, &args)?,
        (None, None) => bail!("give --space SPACE (runs the engine's --help) or --help-text FILE"),
    };
    if let Some(out) = &args.out {
        let out = in_folder(out, &catalogue, "json");
        let text = serde_json::to_string_pretty(&catalogue)? + "\n";
        std::fs::write(&out, text).with_context(|| format!("writing {}", out.display()))?;
        println!("wrote {}", out.display());
    }
    print_summary(&catalogue, args.all);
    Ok(0)
}

/// `path`, or `<engine>-<version>.<extension>` inside it when it is a folder.
fn in_folder(path: &Path, catalogue: &Catalogue, extension: &str) -> PathBuf {
    if !path.is_dir() {
        return path.to_path_buf();
    }
    let engine = catalogue.engine.to_string();
    path.join(format!("{engine}-{}.{extension}", catalogue.version))
}

fn installed(space: &Path, args: &FlagsArgs) -> anyhow::Result<Catalogue> {
    let space = StudySpec::load(space, crate::engine::rule_pack)?;
    if matches!(
        space.engine.kind,
        EngineKind::Mindie | EngineKind::Xinference
    ) {
        let kind = space.engine.kind;
        let chosen = catalogue::choose(kind, space.engine.version.as_deref())?
            .context("no catalogue of this engine is shipped")?;
        println!(
            "{kind} has no --help; its catalogue is the shipped {}",
            chosen.describe()
        );
        return Ok(chosen.catalogue);
    }
    let (catalogue, help) = catalogue::from_installed(&space)?;
    if let Some(file) = &args.save_help {
        let file = in_folder(file, &catalogue, "help.txt");
        std::fs::write(&file, &help.text).with_context(|| format!("writing {}", file.display()))?;
    }
    let cached = catalogue::write_cache(&catalogue)?;
    println!("read `{}`; cached {}", help.command, cached.display());
    Ok(catalogue)
}

fn captured(file: &Path, args: &FlagsArgs) -> anyhow::Result<Catalogue> {
    let (Some(engine), Some(version)) = (&args.engine, &args.version) else {
        bail!("--help-text needs --engine and --version");
    };
    let kind: EngineKind = serde_json::from_value(serde_json::Value::String(engine.clone()))
        .map_err(|_| anyhow::anyhow!("--engine {engine}: expected vllm, sglang or llamacpp"))?;
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let source = args
        .source
        .clone()
        .unwrap_or_else(|| file.display().to_string());
    catalogue::from_help_text(kind, version, &source, &text)
}

fn print_summary(catalogue: &Catalogue, all: bool) {
    let count = |t: Takes| catalogue.entries.iter().filter(|e| e.takes == t).count();
    let deprecated = catalogue
        .entries
        .iter()
        .filter(|e| e.deprecated.is_some())
        .count();
    println!(
        "{} from `{}`: {} entries ({} take a value, {} switches, {} negatable; {} deprecated)",
        catalogue.label(),
        catalogue.source,
        catalogue.entries.len(),
        count(Takes::Value),
        count(Takes::Switch),
        count(Takes::Negatable),
        deprecated
    );
    if !all {
        return;
    }
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(120)
        .set_header(vec![
            "flag",
            "takes",
            "type",
            "choices",
            "default",
            "deprecated",
        ]);
    for e in &catalogue.entries {
        t.add_row(vec![
            std::iter::once(e.name.clone())
                .chain(e.aliases.iter().cloned())
                .collect::<Vec<_>>()
                .join(", "),
            format!("{:?}", e.takes).to_lowercase(),
            e.ty.map(|t| format!("{t:?}").to_lowercase())
                .unwrap_or_default(),
            e.choices
                .as_ref()
                .map(|c| c.join(" | "))
                .unwrap_or_default(),
            e.default.clone().unwrap_or_default(),
            e.removed_in
                .as_ref()
                .map(|r| format!("removed in {r}"))
                .or_else(|| e.deprecated.as_ref().map(|_| "yes".into()))
                .unwrap_or_default(),
        ]);
    }
    println!("{t}");
}
