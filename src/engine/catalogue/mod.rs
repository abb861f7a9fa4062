//! Flag catalogues: the flags (or config keys) an engine version accepts, read from the
//! engine's own `--help` (vLLM, SGLang, llama.cpp) or, for MindIE, its config.json schema.
//! Spaces are checked against them before anything is launched.

mod generate;
mod help;
mod select;
mod values;
mod verify;

pub use generate::{from_help_text, from_installed, write_cache, HelpSource};
pub use select::{cache_dir, choose, Chosen};

pub use verify::{verify, Verdict};

use crate::space::EngineKind;
use serde::{Deserialize, Serialize};

/// What one engine version accepts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Catalogue {
    /// The engine.
    pub engine: EngineKind,
    /// The version it was read from, as the engine reports it.
    pub version: String,
    /// Where it was read from (`vllm serve --help=all`, `config.json schema`).
    pub source: String,
    /// Flags (`--max-num-seqs`) or dotted config paths (`BackendConfig.ScheduleConfig.maxBatchSize`).
    pub entries: Vec<Entry>,
}

/// One flag or config key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Its main spelling.
    pub name: String,
    /// Other spellings the engine accepts for it (`-tp`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// Whether it takes a value.
    pub takes: Takes,
    /// The value's type, where the engine says.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub ty: Option<ValueType>,
    /// The only values it accepts, where it has such a list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choices: Option<Vec<String>>,
    /// The engine's default, as it prints it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// The engine's deprecation note, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecated: Option<String>,
    /// The version that removes it, when the engine announces one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed_in: Option<String>,
}

/// How a flag is written on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Takes {
    /// `--x VALUE` (or a config key holding a value).
    Value,
    /// `--x` alone, nothing to turn it off.
    Switch,
    /// `--x` and `--no-x`.
    Negatable,
}

/// The type of a flag's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ValueType {
    /// A whole number.
    Int,
    /// A number.
    Float,
    /// true or false.
    Bool,
    /// Any text.
    Text,
}

impl Catalogue {
    /// The entry spelled `name` (main spelling or alias).
    pub fn entry(&self, name: &str) -> Option<&Entry> {
        self.entries
            .iter()
            .find(|e| e.name == name || e.aliases.iter().any(|a| a == name))
    }

    /// The negatable entry whose `--no-` form `name` is (`--no-cont-batching`).
    pub fn negated(&self, name: &str) -> Option<&Entry> {
        let positive = format!("--{}", name.strip_prefix("--no-")?);
        self.entry(&positive)
            .filter(|e| e.takes == Takes::Negatable)
    }

    /// Every spelling, for suggestions.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries
            .iter()
            .flat_map(|e| std::iter::once(&e.name).chain(&e.aliases))
            .map(String::as_str)
    }

    /// `vllm 0.32.0`.
    pub fn label(&self) -> String {
        format!("{} {}", self.engine, self.version)
    }
}

/// The catalogues shipped with infertune, from every engine's folder (`src/engine/<name>/`).
pub fn shipped() -> Vec<Catalogue> {
    super::KINDS
        .iter()
        .flat_map(|kind| super::describe(*kind).catalogues)
        .map(|(file, text)| {
            serde_json::from_str(text)
                .unwrap_or_else(|e| panic!("shipped catalogue {file} is malformed: {e}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each shipped catalogue read from an engine's help is what the reader makes of the help
    /// text captured with it (`scripts/gen-flag-catalogue.sh --from-fixtures` rewrites them).
    #[test]
    fn shipped_catalogues_are_the_captured_help_texts_read_again() {
        let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/help");
        let mut compared = 0;
        for catalogue in shipped() {
            let help = fixtures.join(format!(
                "{}-{}.help.txt",
                catalogue.engine, catalogue.version
            ));
            if matches!(
                catalogue.engine,
                EngineKind::Mindie | EngineKind::Xinference
            ) {
                assert!(!help.exists());
                continue;
            }
            let text = std::fs::read_to_string(&help).unwrap();
            let again = from_help_text(
                catalogue.engine,
                &catalogue.version,
                &catalogue.source,
                &text,
            )
            .unwrap();
            assert_eq!(again, catalogue, "{}", help.display());
            compared += 1;
        }
        assert_eq!(compared, 3);
    }

    #[test]
    fn the_real_help_texts_hold_the_flags_spaces_use() {
        let vllm = shipped()
            .into_iter()
            .find(|c| c.engine == EngineKind::Vllm)
            .unwrap();
        let seqs = vllm.entry("--max-num-seqs").unwrap();
        assert_eq!(seqs.takes, Takes::Value);
        let prefix = vllm.entry("--enable-prefix-caching").unwrap();
        assert_eq!(prefix.takes, Takes::Negatable);
        assert!(vllm.entry("--no-enable-prefix-caching").is_none());
        assert_eq!(vllm.entry("-tp").unwrap().name, "--tensor-parallel-size");
        let utilisation = vllm.entry("--gpu-memory-utilization").unwrap();
        assert_eq!(
            (utilisation.ty, utilisation.default.as_deref()),
            (Some(ValueType::Float), Some("0.92"))
        );
        assert_eq!(
            vllm.entry("--tokenizer-mode")
                .unwrap()
                .choices
                .as_ref()
                .unwrap()[0],
            "auto"
        );
        let llama = shipped()
            .into_iter()
            .find(|c| c.engine == EngineKind::Llamacpp)
            .unwrap();
        let fa = llama.entry("-fa").unwrap();
        assert_eq!(fa.choices.as_deref().unwrap(), ["on", "off", "auto"]);
        assert_eq!(llama.entry("--parallel").unwrap().aliases, ["-np"]);
        let sglang = shipped()
            .into_iter()
            .find(|c| c.engine == EngineKind::Sglang)
            .unwrap();
        assert!(sglang
            .entry("--schedule-policy")
            .unwrap()
            .choices
            .as_ref()
            .unwrap()
            .contains(&"lpm".to_string()));
        assert!(sglang
            .entry("--disable-cuda-graph")
            .unwrap()
            .deprecated
            .is_some());
    }
}
