//! Optuna's samplers as an outside baseline: `scripts/bench-optuna.py`, run with a Python that
//! has Optuna (`scripts/provision-optuna.sh`), asks for configs over JSON lines and this side
//! resolves and judges each one with the scenario's own [`Scenario::trial`], so Optuna sees
//! exactly what the benchmark's samplers see.

use super::{Scenario, SearchRun};
use anyhow::Context;
use infertune::record::Params;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Where the Optuna driver is and which of its samplers to run.
#[derive(Clone, Debug)]
pub struct OptunaConfig {
    /// A Python with Optuna and cmaes installed.
    pub python: PathBuf,
    /// The driver script.
    pub driver: PathBuf,
    /// Driver sampler names (`tpe`, `cmaes`); results are labelled `optuna-<name>`.
    pub samplers: Vec<String>,
}

impl OptunaConfig {
    /// Result labels of the configured samplers.
    pub fn labels(&self) -> Vec<String> {
        self.samplers.iter().map(|s| label(s)).collect()
    }
}

/// Result label of driver sampler `name`.
pub fn label(name: &str) -> String {
    format!("optuna-{name}")
}

#[derive(Deserialize)]
struct Ask {
    seed: u64,
    params: Params,
}

#[derive(Serialize)]
struct Verdict {
    refused: bool,
    feasible: bool,
    value: Option<f64>,
}

/// Every seed of driver sampler `name` on `scenario`, `trials` counted trials each (configs
/// the space refuses are told to Optuna but not counted, as the benchmark's samplers never
/// launch them).
pub fn search(
    scenario: &Scenario,
    config: &OptunaConfig,
    name: &str,
    seeds: u64,
    trials: usize,
) -> anyhow::Result<Vec<SearchRun>> {
    let seed_list: Vec<String> = (0..seeds).map(|s| s.to_string()).collect();
    let mut child = Command::new(&config.python)
        .arg(&config.driver)
        .args(["--sampler", name, "--trials", &trials.to_string()])
        .args(["--seeds", &seed_list.join(",")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| {
            format!(
                "cannot start {} {}; run scripts/provision-optuna.sh and pass its python \
                 with --optuna",
                config.python.display(),
                config.driver.display()
            )
        })?;
    let mut stdin = child.stdin.take().context("driver stdin")?;
    let stdout = BufReader::new(child.stdout.take().context("driver stdout")?);
    let parameters = serde_json::json!({ "parameters": scenario.space.parameters() });
    writeln!(stdin, "{parameters}")?;
    let mut runs: BTreeMap<u64, (Vec<Option<f64>>, Option<f64>)> = BTreeMap::new();
    for line in stdout.lines() {
        let line = line?;
        let ask: Ask = serde_json::from_str(&line)
            .with_context(|| format!("the Optuna driver wrote `{line}`, not a config"))?;
        let (best, top) = runs.entry(ask.seed).or_default();
        let verdict = match scenario.space.resolve(&ask.params) {
            Err(_) => Verdict {
                refused: true,
                feasible: false,
                value: None,
            },
            Ok(resolved) => {
                let record = scenario.trial(best.len(), resolved);
                let feasible = record.is_feasible();
                if let (true, Some(v)) = (feasible, record.value) {
                    *top = Some(top.map_or(v, |b: f64| b.max(v)));
                }
                best.push(*top);
                Verdict {
                    refused: false,
                    feasible,
                    value: record.value,
                }
            }
        };
        writeln!(stdin, "{}", serde_json::to_string(&verdict)?)?;
    }
    drop(stdin);
    let status = child.wait()?;
    anyhow::ensure!(
        status.success(),
        "the Optuna driver ({name} on {}) exited with {status}; see its message above",
        scenario.name
    );
    (0..seeds)
        .map(|seed| {
            let best = runs.remove(&seed).map(|(b, _)| b).unwrap_or_default();
            anyhow::ensure!(
                best.len() == trials,
                "the Optuna driver ({name} on {}, seed {seed}) ran {} trials, not {trials}",
                scenario.name,
                best.len()
            );
            Ok(SearchRun {
                sampler: label(name),
                seed,
                best,
            })
        })
        .collect()
}
