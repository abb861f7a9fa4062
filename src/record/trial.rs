//! One trial's outcome: what the journal stores and samplers learn from.

use super::{legacy, FailureKind, MetricMap, Params, Violation};
use serde::{Deserialize, Serialize};

/// A trial, as appended to `journal.jsonl`. Self-contained so it can come back from another machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrialRecord {
    /// Trial number, from 0, unique within a study.
    pub number: u32,
    /// The resolved config.
    pub params: Params,
    /// What happened.
    pub outcome: Outcome,
    /// Probe metrics (empty when the trial never probed).
    #[serde(default)]
    pub metrics: MetricMap,
    /// Objective value as the user states it (e.g. output tok/s); `None` without a probe.
    #[serde(default)]
    pub value: Option<f64>,
    /// The same value oriented so that higher is better (negated for `minimize`).
    #[serde(default)]
    pub score: Option<f64>,
    /// Why a probed trial is not feasible: the SLOs it broke, with what was measured.
    #[serde(default, deserialize_with = "legacy::violations")]
    pub violations: Vec<Violation>,
    /// True for the engine-default baseline trial.
    #[serde(default)]
    pub baseline: bool,
    /// For re-validation repeats: the trial whose config is repeated.
    #[serde(default)]
    pub repeat_of: Option<u32>,
    /// Seconds from spawn to ready (launched trials only).
    #[serde(default)]
    pub ready_s: Option<f64>,
    /// Wall-clock seconds the whole trial took.
    #[serde(default)]
    pub wall_s: f64,
    /// Unix time (seconds) when the trial started.
    #[serde(default)]
    pub started_unix: f64,
    /// The slot the trial ran on (0 when trials run one at a time; `None` for records written
    /// before slots existed and for configs refused before launch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<u32>,
    /// The accelerators the trial's server was given (empty: the engine's default).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<u32>,
    /// The Slurm job that ran the trial, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<u64>,
}

/// The outcome of a trial.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum Outcome {
    /// Probed, and every SLO held.
    Feasible,
    /// Probed, but at least one SLO was broken (see `violations`).
    Infeasible,
    /// Refused before launch by a constraint or an engine rule.
    Rejected {
        /// Constraint name or rule id.
        rule: String,
        /// Why (the engine's own message for rule packs).
        message: String,
    },
    /// The server failed to start, or the probe could not run against it.
    Failed {
        /// Failure class.
        kind: FailureKind,
        /// Root-cause line from the log.
        message: String,
    },
    /// The server started, then its process exited during the trial (it crashed while
    /// serving): never feasible, whatever the probe measured before.
    Crashed {
        /// How the process ended: `killed by SIGSEGV (11)`, `exited with status 1`.
        exit: String,
        /// Root-cause line from the log (empty when the log names none).
        message: String,
    },
    /// The probe was stopped early because the SLOs were certainly broken.
    Pruned {
        /// Why.
        reason: String,
    },
}

impl TrialRecord {
    /// A record of trial `number` with `params` and `outcome`, nothing measured yet.
    pub fn new(number: u32, params: Params, outcome: Outcome) -> TrialRecord {
        TrialRecord {
            number,
            params,
            outcome,
            metrics: MetricMap::new(),
            value: None,
            score: None,
            violations: Vec::new(),
            baseline: false,
            repeat_of: None,
            ready_s: None,
            wall_s: 0.0,
            started_unix: 0.0,
            slot: None,
            devices: Vec::new(),
            job_id: None,
        }
    }

    /// The violations as reports and CSV show them, separated by `; `.
    pub(crate) fn violations_text(&self) -> String {
        let texts: Vec<String> = self.violations.iter().map(|v| v.to_string()).collect();
        texts.join("; ")
    }

    /// True when the trial probed and met every SLO.
    pub fn is_feasible(&self) -> bool {
        matches!(self.outcome, Outcome::Feasible)
    }

    /// True when the config itself could not serve, a region samplers should avoid: it failed
    /// to start (out of memory, refused, killed, never ready) or crashed while serving.
    pub fn is_config_failure(&self) -> bool {
        matches!(
            self.outcome,
            Outcome::Failed {
                kind: FailureKind::Oom
                    | FailureKind::InvalidConfig
                    | FailureKind::Crash
                    | FailureKind::Timeout,
                ..
            } | Outcome::Crashed { .. }
        )
    }
}
