//! `executor:` of a space: where trials run, on this host's slots or as Slurm jobs.

use serde::{Deserialize, Serialize};

/// Where trials run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecutorKind {
    /// On this host, `search.parallel` slots at once.
    #[default]
    Local,
    /// Each trial one Slurm job running `infertune trial run` on its node.
    Slurm,
}

/// The `executor:` section (its Slurm fields are passed to `sbatch`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecutorSpec {
    /// `local` (default) or `slurm`.
    #[serde(default)]
    pub kind: ExecutorKind,
    /// `sbatch --partition`.
    pub partition: Option<String>,
    /// `sbatch --gres`, e.g. `gpu:1`.
    pub gres: Option<String>,
    /// `sbatch --time`, e.g. `30:00`.
    pub time: Option<String>,
    /// `sbatch --account`.
    pub account: Option<String>,
    /// `sbatch --qos`.
    pub qos: Option<String>,
    /// Further `sbatch` arguments, as written.
    #[serde(default)]
    pub sbatch_args: Vec<String>,
    /// Jobs queued or running at once (default 8).
    pub max_jobs: Option<u32>,
}

impl ExecutorSpec {
    /// The `sbatch` options this section sets, before the job's own.
    pub fn sbatch_options(&self) -> Vec<String> {
        let named = [
            ("--partition", &self.partition),
            ("--gres", &self.gres),
            ("--time", &self.time),
            ("--account", &self.account),
            ("--qos", &self.qos),
        ];
        named
            .iter()
            .filter_map(|(flag, value)| value.as_ref().map(|v| format!("{flag}={v}")))
            .chain(self.sbatch_args.iter().cloned())
            .collect()
    }
}
