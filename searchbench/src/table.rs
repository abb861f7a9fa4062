//! Scenarios measured on a real engine: every config of a small grid was run (and repeated) by
//! real studies, and a search's trial of a config observes the mean of those runs. Searches are
//! then judged against the grid's own best, as the grid measured it.

use super::{Evaluator, Scenario, StartupFailure};
use anyhow::Context;
use infertune::record::{MetricMap, Outcome, Params, TrialRecord};
use infertune::space::{StudySpec, Target};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

/// The measured grid: each config's mean metrics, or why it did not start.
struct Grid {
    /// Parameters the engine receives (those not marked `internal`), which key the grid.
    passed: Vec<String>,
    measured: HashMap<String, Result<MetricMap, StartupFailure>>,
}

impl Grid {
    fn key(&self, params: &Params) -> String {
        let engine: Params = params
            .iter()
            .filter(|(name, _)| self.passed.contains(name))
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        serde_json::to_string(&engine).unwrap_or_default()
    }
}

impl Evaluator for Grid {
    fn evaluate(&self, params: &Params) -> Result<MetricMap, StartupFailure> {
        self.measured
            .get(&self.key(params))
            .cloned()
            .unwrap_or_else(|| {
                Err(StartupFailure {
                    kind: infertune::record::FailureKind::InvalidConfig,
                    message: "this config is not in the measured grid".into(),
                })
            })
    }
}

/// The scenario of the space file at `space` whose trials look up the runs recorded in the
/// study folders `studies` (journals of studies over the same space). A config measured more
/// than once observes its runs' mean; one that never ran to the end, its first failure.
pub fn scenario(space: &Path, studies: &[PathBuf]) -> anyhow::Result<Scenario> {
    let spec = StudySpec::load(space, infertune::engine::rule_pack)?;
    let passed = spec
        .parameters
        .iter()
        .filter(|p| p.target != Some(Target::None))
        .map(|p| p.name.clone())
        .collect();
    let mut grid = Grid {
        passed,
        measured: HashMap::new(),
    };
    let mut runs: HashMap<String, Vec<MetricMap>> = HashMap::new();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for dir in studies {
        let records = infertune::study::journal::read_records(dir)
            .with_context(|| format!("grid study {}", dir.display()))?;
        for record in records {
            let key = grid.key(&record.params);
            key.hash(&mut hasher);
            match measured(&record) {
                Ok(metrics) => runs.entry(key).or_default().push(metrics),
                Err(failure) => {
                    grid.measured.entry(key).or_insert(Err(failure));
                }
            }
        }
    }
    anyhow::ensure!(
        !runs.is_empty(),
        "the grid studies {studies:?} hold no probed trial; run scripts/bench-real-grid.sh first"
    );
    for (key, list) in runs {
        grid.measured.insert(key, Ok(mean(&list)));
    }
    Ok(Scenario {
        name: spec.name.clone(),
        fingerprint: format!("grid-{:016x}", hasher.finish()),
        objective: super::maximised(&spec)?,
        evaluator: Box::new(grid),
        expert: super::expert_of(&spec),
        twin: None,
        space: Box::new(spec),
    })
}

/// The metrics a probed record measured, or why it has none.
fn measured(record: &TrialRecord) -> Result<MetricMap, StartupFailure> {
    match &record.outcome {
        Outcome::Feasible | Outcome::Infeasible => Ok(record.metrics.clone()),
        Outcome::Failed { kind, message } => Err(StartupFailure {
            kind: *kind,
            message: message.clone(),
        }),
        other => Err(StartupFailure {
            kind: infertune::record::FailureKind::Crash,
            message: format!("{other:?}"),
        }),
    }
}

/// Metric-wise mean of `runs` over the metrics every run has.
fn mean(runs: &[MetricMap]) -> MetricMap {
    let n = runs.len() as f64;
    runs[0]
        .keys()
        .filter(|k| runs.iter().all(|r| r.contains_key(*k)))
        .map(|k| (k.clone(), runs.iter().map(|r| r[k]).sum::<f64>() / n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_observes_the_mean_of_its_runs() {
        let runs = [
            MetricMap::from([("output_throughput".into(), 100.0), ("x".into(), 1.0)]),
            MetricMap::from([("output_throughput".into(), 120.0)]),
        ];
        assert_eq!(
            mean(&runs),
            MetricMap::from([("output_throughput".into(), 110.0)])
        );
    }
}
