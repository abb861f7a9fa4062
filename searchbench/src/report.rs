//! Benchmark outputs: per-trial regret CSV, a regret-vs-trials SVG, and the summary table.

use super::ScenarioResult;
use infertune::util::stats::median;
use std::fmt::Write as _;
use std::path::Path;

/// "Close to the optimum": within this relative regret.
pub const TOLERANCE: f64 = 0.03;
/// Trial count at which median regret is reported.
pub(crate) const REGRET_AT: usize = 20;

/// One row of the summary: a sampler on a scenario (or on all of them).
#[derive(Clone, Debug)]
pub struct Summary {
    /// Scenario name, or `all`.
    pub scenario: String,
    /// Sampler name.
    pub sampler: String,
    /// Median over seeds of the trials needed to get within [`TOLERANCE`]; runs that never get
    /// there count as `budget + 1`.
    pub median_trials: f64,
    /// Whether the median is such a censored value (reported as `>budget`).
    pub censored: bool,
    /// `median_trials` of this sampler / that of `random` on the same rows.
    pub vs_random: Option<f64>,
    /// Whether random's median is censored, making `vs_random` an upper bound.
    pub random_censored: bool,
    /// Median relative regret after 20 trials (`REGRET_AT`).
    pub median_regret_at: f64,
    /// Runs that got within the tolerance, and all runs.
    pub reached: (usize, usize),
}

/// The summary rows, per scenario and over all scenarios, for samplers in `order`.
pub fn summarise(results: &[ScenarioResult], order: &[String]) -> Vec<Summary> {
    let mut rows = Vec::new();
    let per_scenario: Vec<(String, Vec<&ScenarioResult>)> = results
        .iter()
        .map(|r| (r.name.clone(), vec![r]))
        .chain(std::iter::once((
            "all".to_string(),
            results.iter().collect(),
        )))
        .collect();
    for (scenario, group) in per_scenario {
        let stats: Vec<(String, Vec<f64>, Vec<f64>, usize)> = order
            .iter()
            .map(|sampler| {
                let (mut trials, mut regrets, mut budget) = (Vec::new(), Vec::new(), 0);
                for result in &group {
                    for run in result.runs.iter().filter(|r| &r.sampler == sampler) {
                        budget = run.best.len();
                        let reached = result.trials_to_reach(run, TOLERANCE);
                        trials.push(reached.map_or(budget as f64 + 1.0, |t| t as f64));
                        regrets.push(result.regret(run, REGRET_AT.min(budget)));
                    }
                }
                (sampler.clone(), trials, regrets, budget)
            })
            .collect();
        let random_row = stats.iter().find(|(s, ..)| s == "random");
        let random = random_row.map(|(_, t, ..)| median(t));
        let random_censored = random_row.is_some_and(|(_, t, _, b)| median(t) > *b as f64);
        for (sampler, trials, regrets, budget) in stats {
            let m = median(&trials);
            rows.push(Summary {
                scenario: scenario.clone(),
                sampler,
                median_trials: m,
                censored: m > budget as f64,
                vs_random: random.filter(|r| *r > 0.0).map(|r| m / r),
                random_censored,
                median_regret_at: median(&regrets),
                reached: (
                    trials.iter().filter(|&&t| t <= budget as f64).count(),
                    trials.len(),
                ),
            });
        }
    }
    rows
}

/// "`ours` vs `title`: X× trials": the ratio of the median trials to within [`TOLERANCE`] of
/// samplers `ours` and `theirs` over all scenarios (`None` when either is missing).
pub fn versus(rows: &[Summary], ours: &str, theirs: &str, title: &str) -> Option<String> {
    let all = |sampler: &str| {
        rows.iter()
            .find(|r| r.scenario == "all" && r.sampler == sampler)
    };
    let (a, b) = (all(ours)?, all(theirs)?);
    let bound = match (a.censored, b.censored) {
        (true, true) => {
            return Some(format!(
                "{ours} vs {title}: – (neither median gets within {:.0}% in the budget)",
                TOLERANCE * 100.0
            ))
        }
        (true, false) => "≥",
        (false, true) => "≤",
        (false, false) => "",
    };
    Some(format!(
        "{ours} vs {title}: {bound}{:.2}× trials to within {:.0}% (median over all scenarios: \
         {:.1} against {:.1})",
        a.median_trials / b.median_trials,
        TOLERANCE * 100.0,
        a.median_trials,
        b.median_trials
    ))
}

/// The scenarios as a Markdown table: reference optimum and config, and how uniform draws
/// over the space end.
pub fn scenarios_table(results: &[ScenarioResult]) -> String {
    let mut out = String::from(
        "| scenario | optimum | feasible | SLO-broken | failed at start | refused | best config |\n|---|---|---|---|---|---|---|\n",
    );
    for r in results {
        let s = &r.reference.shares;
        let best = r.reference.best.as_ref().map_or(String::from("–"), |p| {
            p.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        });
        let _ = writeln!(
            out,
            "| {} | {:.1} | {:.1}% | {:.1}% | {:.1}% | {:.1}% | {best} |",
            r.name,
            r.optimum,
            s.feasible * 100.0,
            s.slo_broken * 100.0,
            s.startup_failed * 100.0,
            s.refused * 100.0
        );
    }
    out
}

/// The summary as a Markdown table.
pub fn table(rows: &[Summary], budget: usize) -> String {
    let mut out = format!(
        "| scenario | sampler | median trials to within {:.0}% | × random | median regret @{REGRET_AT} | runs within {:.0}% by {budget} |\n|---|---|---|---|---|---|\n",
        TOLERANCE * 100.0,
        TOLERANCE * 100.0
    );
    for r in rows {
        let trials = if r.censored {
            format!(">{budget}")
        } else {
            format!("{:.1}", r.median_trials)
        };
        let ratio = match (r.vs_random, r.random_censored, r.censored) {
            (Some(_), true, true) | (None, ..) => "–".to_string(),
            (Some(x), true, false) => format!("<{x:.2}"),
            (Some(x), false, _) => format!("{x:.2}"),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {trials} | {ratio} | {:.2}% | {}/{} |",
            r.scenario,
            r.sampler,
            r.median_regret_at * 100.0,
            r.reached.0,
            r.reached.1
        );
    }
    out
}

/// Writes `regret.csv` (one row per scenario, sampler, seed and trial).
pub fn write_csv(results: &[ScenarioResult], path: &Path) -> anyhow::Result<()> {
    let mut w = csv::Writer::from_path(path)?;
    w.write_record([
        "scenario",
        "sampler",
        "seed",
        "trial",
        "best_value",
        "optimum",
        "regret",
    ])?;
    for result in results {
        for run in &result.runs {
            for t in 1..=run.best.len() {
                let best = run.best[t - 1].map_or(String::new(), |v| format!("{v:.3}"));
                w.write_record([
                    result.name.clone(),
                    run.sampler.clone(),
                    run.seed.to_string(),
                    t.to_string(),
                    best,
                    format!("{:.3}", result.optimum),
                    format!("{:.5}", result.regret(run, t)),
                ])?;
            }
        }
    }
    w.flush()?;
    Ok(())
}

/// Median regret per trial count of each sampler on `result`.
pub(crate) fn median_curve(result: &ScenarioResult, sampler: &str) -> Vec<f64> {
    let runs: Vec<_> = result
        .runs
        .iter()
        .filter(|r| r.sampler == sampler)
        .collect();
    let len = runs.iter().map(|r| r.best.len()).max().unwrap_or(0);
    (1..=len)
        .map(|t| {
            let at: Vec<f64> = runs.iter().map(|r| result.regret(r, t)).collect();
            median(&at)
        })
        .collect()
}
