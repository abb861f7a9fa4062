//! The pruner comparison: `bo` with every probe run to its end against `bo` with the percentile
//! pruner (a trial behind the median of the others at a checkpoint of its probe stops there),
//! by the start-up plus probe seconds each needs to get within 0.5% of the optimum, and the
//! regret each ends at, per scenario and over all with a bootstrap range over the seeds.

use super::bootstrap::ratio_interval;
use super::{drive, pool, Scenario, ScenarioResult};
use crate::sampler::from_name;
use crate::study::plan::behind::PercentilePruner;
use crate::util::stats::median;

/// Relative regret within which a search counts as there.
const NEAR: f64 = 0.005;

/// One scenario's searches without and with the pruner.
pub struct Compared {
    /// Scenario name.
    pub name: String,
    /// Seconds to within 0.5% of the optimum, per seed (infinite: never), off and on.
    pub seconds: (Vec<f64>, Vec<f64>),
    /// Regret after the last trial, per seed, off and on.
    pub regret: (Vec<f64>, Vec<f64>),
    /// Share of the pruned searches' trials that were pruned.
    pub pruned_share: f64,
}

/// `bo` on `scenario` for `seeds` seeds of `trials` trials, without and with the pruner.
pub fn compare(
    scenario: &Scenario,
    result: &ScenarioResult,
    seeds: u64,
    trials: usize,
    threads: usize,
) -> anyhow::Result<Compared> {
    let pruner = PercentilePruner {
        percentile: 50.0,
        startup_trials: 5,
        direction: scenario.objective.spec().direction,
    };
    let jobs: Vec<(u64, bool)> = (0..seeds)
        .flat_map(|seed| [(seed, false), (seed, true)])
        .collect();
    let runs = pool::map(&jobs, threads, |&(seed, pruned)| {
        let mut sampler = from_name("bo", seed)?;
        drive::search(scenario, &mut *sampler, trials, pruned.then_some(pruner))
    });
    let (mut compared, mut trials_on, mut pruned_on) = (
        Compared {
            name: scenario.name.clone(),
            seconds: (Vec::new(), Vec::new()),
            regret: (Vec::new(), Vec::new()),
            pruned_share: 0.0,
        },
        0usize,
        0usize,
    );
    for (&(_, pruned), run) in jobs.iter().zip(runs) {
        let run = run?;
        let regret = |best: Option<f64>| {
            best.map_or(1.0, |b| ((result.optimum - b) / result.optimum).max(0.0))
        };
        let there = run
            .best
            .iter()
            .position(|b| regret(*b) <= NEAR)
            .map_or(f64::INFINITY, |t| run.seconds[t]);
        let last = regret(run.best.last().copied().flatten());
        let (seconds, regrets) = if pruned {
            trials_on += run.records.len();
            pruned_on += run
                .records
                .iter()
                .filter(|r| matches!(r.outcome, crate::record::Outcome::Pruned { .. }))
                .count();
            (&mut compared.seconds.1, &mut compared.regret.1)
        } else {
            (&mut compared.seconds.0, &mut compared.regret.0)
        };
        seconds.push(there);
        regrets.push(last);
    }
    compared.pruned_share = pruned_on as f64 / trials_on.max(1) as f64;
    Ok(compared)
}

/// The comparison as a Markdown table, with the ratio over all scenarios and its bootstrap
/// range.
pub fn table(compared: &[Compared]) -> String {
    let mut out = String::from(
        "Pruner (percentile 50, from 5 trials, checkpoints at 25/50/75% of the probe), `bo`; \
         start-up + probe seconds to within 0.5% of the optimum (median over seeds):\n\n\
         | scenario | off s | on s | off / on | final regret off / on | trials pruned |\n\
         |---|---|---|---|---|---|\n",
    );
    for c in compared {
        let (off, on) = (median(&c.seconds.0), median(&c.seconds.1));
        out.push_str(&format!(
            "| {} | {off:.0} | {on:.0} | {:.2}× | {:.3}% / {:.3}% | {:.0}% |\n",
            c.name,
            off / on,
            median(&c.regret.0) * 100.0,
            median(&c.regret.1) * 100.0,
            c.pruned_share * 100.0
        ));
    }
    let samples: Vec<(Vec<f64>, Vec<f64>)> = compared.iter().map(|c| c.seconds.clone()).collect();
    let off: f64 = compared.iter().map(|c| median(&c.seconds.0)).sum();
    let on: f64 = compared.iter().map(|c| median(&c.seconds.1)).sum();
    let (lo, hi) = ratio_interval(&samples, median);
    out.push_str(&format!(
        "| all | {off:.0} | {on:.0} | **{:.2}×** ({lo:.2}–{hi:.2}×) | | |\n\n\
         (Range: 90% of 2,000 bootstrap draws of the seeds; above 1× the pruner saves time.)\n",
        off / on
    ));
    out
}
