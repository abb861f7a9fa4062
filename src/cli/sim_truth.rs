//! The measurements and the simulated target that `sim validate` and `sim calibrate` share.

use crate::sim::validate::{read_truth, TruthRow, TruthTarget};
use crate::sim::CardScale;
use std::path::PathBuf;
use std::time::Duration;

/// A truth file and what its rows are simulated on.
#[derive(clap::Args, Debug)]
pub(crate) struct TruthArgs {
    /// Measurements: one load stage a row (the format of data/sim-truth/h100-vllm.csv), or one
    /// closed loop a row (`isl`, `osl`, `batch_size`, `tp_size`, as in AI Configurator's
    /// silicon measurements).
    #[arg(long)]
    truth: PathBuf,
    /// Folder of Hugging Face config.json files, each named after the last component of the
    /// CSV's model (`meta-llama/Llama-2-7b-hf` → `Llama-2-7b-hf.json`); a model without a file
    /// there is looked up among the shipped model profiles.
    #[arg(long)]
    model_configs: Option<PathBuf>,
    /// Card the measurements ran on: a profile name, or the path of a card profile file such
    /// as `sim calibrate` writes (any existing file, whatever its extension).
    #[arg(long, default_value = "H100")]
    pub(super) card: String,
    /// vLLM version measured (default: a current one).
    #[arg(long)]
    engine_version: Option<String>,
    /// Seed of the engine noise.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

impl TruthArgs {
    /// The truth file.
    pub(super) fn file(&self) -> &std::path::Path {
        &self.truth
    }

    /// The rows of the truth file.
    pub(super) fn rows(&self) -> anyhow::Result<Vec<TruthRow>> {
        read_truth(&self.truth).map_err(anyhow::Error::msg)
    }

    /// The simulated target, simulating at most `longest` of each stage.
    pub(super) fn target(&self, longest: Option<Duration>) -> TruthTarget {
        TruthTarget {
            model_configs: self.model_configs.clone(),
            card: self.card.clone(),
            card_scale: CardScale::default(),
            version: self.engine_version.clone(),
            seed: self.seed,
            longest,
        }
    }
}
