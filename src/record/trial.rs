//! One trial's outcome: what the journal stores and samplers learn from.

use super::{FailureKind, MetricMap, Params, ServerStats, Violation};
use serde::{Deserialize, Serialize};

/// Two-sided 95% quantile of the normal: a half-width is this many standard errors.
pub const Z95: f64 = 1.96;

/// Least gain worth tuning for, relative to what it is measured against: "tuning did not help"
/// is said only when the gain's interval rules out a gain this large, and a challenger that can
/// trail the best config by no more than this is not measured again to tell them apart.
pub const MIN_GAIN: f64 = 0.05;

/// A trial's role in its study.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum TrialKind {
    /// The engine's defaults, run before any other config.
    Baseline,
    /// A config the search proposed or queued.
    #[default]
    Search,
    /// A re-validation run of the config of trial `of`.
    Repeat {
        /// The trial whose config is run again.
        of: u32,
    },
}

impl TrialKind {
    /// True for the engine-default baseline.
    pub fn is_baseline(self) -> bool {
        self == TrialKind::Baseline
    }

    /// The trial a re-validation repeat runs again; `None` for the others.
    pub fn repeat_of(self) -> Option<u32> {
        match self {
            TrialKind::Repeat { of } => Some(of),
            _ => None,
        }
    }
}

/// Which trial: its number, unique within a study, and its role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrialId {
    /// Trial number, from 0.
    pub number: u32,
    /// Its role.
    #[serde(flatten)]
    pub kind: TrialKind,
}

/// A trial in flight: which one, and its resolved config. While it runs its folder holds this
/// (`pending.json`), so a study whose tuner was killed runs it again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InFlight {
    /// Which trial.
    #[serde(flatten)]
    pub id: TrialId,
    /// Its config.
    pub params: Params,
}

/// A trial, as appended to `journal.jsonl`. Self-contained so it can come back from another machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrialRecord {
    /// Which trial: its number, unique within a study, and its role.
    #[serde(flatten)]
    pub id: TrialId,
    /// The resolved config.
    pub params: Params,
    /// What happened.
    pub outcome: Outcome,
    /// Probe metrics (empty when the trial never probed).
    #[serde(default)]
    pub metrics: MetricMap,
    /// The same metrics for each stage of a staged load, in order (`stage` 0, 1, … as in
    /// bench's JSON); empty for other loads.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<MetricMap>,
    /// Objective value as the user states it (e.g. output tok/s); `None` without a probe.
    #[serde(default)]
    pub value: Option<f64>,
    /// The same value oriented so that higher is better (negated for `minimize`).
    #[serde(default)]
    pub score: Option<f64>,
    /// Half-width of the 95% confidence interval of `value` within this run (batch means over
    /// the probe's steady-state window), in the value's units; `None` when the probe could not
    /// measure one (too few batches, or an objective the probe has no interval for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub half_width: Option<f64>,
    /// Why a probed trial is not feasible: the SLOs it broke, with what was measured.
    #[serde(default)]
    pub violations: Vec<Violation>,
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
    /// What the server and its accelerators reported during the probe; `None` when nothing
    /// was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerStats>,
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
    /// A record of search trial `number` with `params` and `outcome`, nothing measured yet.
    pub fn new(number: u32, params: Params, outcome: Outcome) -> TrialRecord {
        TrialRecord::of(
            TrialId {
                number,
                kind: TrialKind::Search,
            },
            params,
            outcome,
        )
    }

    /// A record of trial `id` with `params` and `outcome`, nothing measured yet.
    pub fn of(id: TrialId, params: Params, outcome: Outcome) -> TrialRecord {
        TrialRecord {
            stages: Vec::new(),
            id,
            params,
            outcome,
            metrics: MetricMap::new(),
            value: None,
            score: None,
            half_width: None,
            violations: Vec::new(),
            ready_s: None,
            wall_s: 0.0,
            started_unix: 0.0,
            slot: None,
            devices: Vec::new(),
            job_id: None,
            server: None,
        }
    }

    /// True for the engine-default baseline.
    pub fn is_baseline(&self) -> bool {
        self.id.kind.is_baseline()
    }

    /// The trial a re-validation repeat runs again; `None` for the others.
    pub fn repeat_of(&self) -> Option<u32> {
        self.id.kind.repeat_of()
    }

    /// The violations as reports and CSV show them, separated by `; `.
    pub(crate) fn violations_text(&self) -> String {
        let texts: Vec<String> = self.violations.iter().map(|v| v.to_string()).collect();
        texts.join("; ")
    }

    /// The standard error of this run's value relative to the value (its log's standard
    /// error), from the run's own interval; `None` without an interval or with a zero value.
    pub fn relative_error(&self) -> Option<f64> {
        let (half, value) = (self.half_width?, self.value?);
        (value != 0.0 && half.is_finite()).then(|| half / Z95 / value.abs())
    }

    /// True for a probed trial whose SLOs all held.
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
