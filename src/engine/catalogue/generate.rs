//! Generating a catalogue: run the installed engine's `--help` (nothing is served) and read
//! its flags; or read a help text captured earlier.

use super::select::cache_dir;
use super::{help, Catalogue};
use crate::engine::assemble::program_and_leading;
use crate::space::{rules, EngineKind, StudySpec};
use crate::util::process::run_with_timeout;
use anyhow::{bail, Context as _};
use std::path::PathBuf;
use std::time::Duration;

/// How long `--help` may take (vLLM imports torch and its model registry first).
const HELP_TIMEOUT: Duration = Duration::from_secs(180);

/// The help text an engine printed, and the command that printed it.
#[derive(Clone, Debug)]
pub struct HelpSource {
    /// The command line, for `source`.
    pub command: String,
    /// What it printed.
    pub text: String,
}

/// The command that prints `kind`'s full flag list (after the program and leading args).
fn help_command(kind: EngineKind) -> anyhow::Result<(&'static [&'static str], &'static str)> {
    Ok(match kind {
        EngineKind::Vllm => (&["vllm", "serve"], "--help=all"),
        EngineKind::Sglang => (&["python3", "-m", "sglang.launch_server"], "--help"),
        EngineKind::Llamacpp => (&["llama-server"], "--help"),
        EngineKind::Mindie => bail!(
            "MindIE has no --help; its catalogue is the config.json schema shipped in \
             src/engine/mindie/mindie-*.json"
        ),
        EngineKind::Xinference => bail!(
            "XInference has no list of its settings; its catalogue is written by \
             scripts/gen-xinference-catalogue.py into src/engine/xinference/xinference-*.json"
        ),
        EngineKind::Custom | EngineKind::Sim => {
            bail!("{} engines have no flag list to read", kind)
        }
    })
}

/// Runs the help of the engine `space` launches (its `launch.command`, else the engine's
/// usual program on `PATH`) and reads it into a catalogue for the version the engine reports
/// (else the space's `engine.version`).
pub fn from_installed(space: &StudySpec) -> anyhow::Result<(Catalogue, HelpSource)> {
    let kind = space.engine.kind;
    let (default, help_arg) = help_command(kind)?;
    let (program, mut args) = program_and_leading(space, default);
    args.push(help_arg.to_string());
    let command = std::iter::once(program.clone())
        .chain(args.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ");
    let arg_refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run_with_timeout(&program, &arg_refs, HELP_TIMEOUT)
        .with_context(|| format!("running `{command}`"))?;
    if !out.status.success() {
        let tail: Vec<&str> = out.stderr.lines().rev().take(5).collect();
        bail!(
            "`{command}` failed ({}): {}",
            out.status,
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    }
    let version = rules::effective_version(space.rule_pack, None, space.launch.command.as_deref())
        .or_else(|| space.engine.version.clone())
        .with_context(|| {
            format!(
                "{} did not report its version; set `engine.version` in {}",
                kind, space.origin
            )
        })?;
    let source = HelpSource {
        command: command.clone(),
        text: out.stdout,
    };
    let catalogue = from_help_text(kind, &version, &command, &source.text)?;
    Ok((catalogue, source))
}

/// The catalogue of `kind` at `version` read from a help text that `command` printed.
pub fn from_help_text(
    kind: EngineKind,
    version: &str,
    command: &str,
    text: &str,
) -> anyhow::Result<Catalogue> {
    let entries = help::parse(text);
    if entries.is_empty() {
        bail!("`{command}` printed no flags this reader recognises");
    }
    Ok(Catalogue {
        engine: kind,
        version: version.to_string(),
        source: command.to_string(),
        entries,
    })
}

/// Writes `catalogue` to the per-version cache (`<engine>-<version>.json` in [`cache_dir`]),
/// where `check` and `tune` find it; returns the file.
pub fn write_cache(catalogue: &Catalogue) -> anyhow::Result<PathBuf> {
    let dir = cache_dir();
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let safe: String = catalogue
        .version
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || ".-_+".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let path = dir.join(format!("{}-{safe}.json", catalogue.engine));
    let text = serde_json::to_string_pretty(catalogue)?;
    std::fs::write(&path, text + "\n").with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}
