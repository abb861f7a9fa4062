//! Screening benchmark: the default sampler under a wall-clock budget (modelled start-up plus
//! probe seconds, in virtual time), every config on the full probe against new configs
//! screened first with the study's own rules ([`crate::study::screening`]), cut short where the
//! study cuts it (`crate::study::outrank`). As in a study whose trials run here, a screening run
//! is the full probe up to its checkpoint, and a config that passes goes on from there on the
//! same server (no second start-up, the screening requests not sent again). Only full-probe
//! runs count as found, as only they can win a study. The two are compared by the probe seconds
//! each spends before it is within the full-probe search's final median regret.

use super::bootstrap::ratio_interval;
use super::report::median;
use super::{pool, Scenario};
use crate::record::{added_probe_seconds, Outcome, Params, TrialRecord, Violation};
use crate::sampler::{from_name, DEFAULT_SAMPLER};
use crate::space::ScreeningSettings;
use crate::study::outrank::Bar;
use crate::study::screening::{promotes, promotion_bar, screening_pays};
use anyhow::Context;

/// How the comparison runs.
#[derive(Clone, Debug)]
pub struct ScreenConfig {
    /// Seconds each search may spend (start-up plus probe).
    pub budget_s: f64,
    /// Seeds (each a full-probe and a screened search).
    pub seeds: u64,
    /// Worker threads.
    pub threads: usize,
    /// The screening of the screened searches.
    pub settings: ScreeningSettings,
}

/// After one trial of a budgeted search.
#[derive(Clone, Copy, Debug)]
pub struct Step {
    /// Seconds spent so far (start-up plus probe).
    pub spent_s: f64,
    /// Probe seconds spent so far.
    pub probe_s: f64,
    /// The full-probe value of the best config so far (by the search's own measurements).
    pub best: Option<f64>,
}

/// One budgeted search.
#[derive(Clone, Debug)]
pub struct BudgetRun {
    /// Every trial's step, in order.
    pub steps: Vec<Step>,
    /// Trials run at the full probe.
    pub full_trials: usize,
    /// Probe seconds of the screening runs.
    pub screening_probe_s: f64,
    /// Probe seconds of the full probes, those that went on from a screening run whole.
    pub full_probe_s: f64,
    /// The config of the best feasible full-probe value at the end.
    pub best_params: Option<Params>,
}

/// One scenario's comparison.
#[derive(Clone, Debug)]
pub struct ScreenResult {
    /// Scenario name.
    pub name: String,
    /// Best value known.
    pub optimum: f64,
    /// Searches probing every config in full.
    pub full: Vec<BudgetRun>,
    /// Searches screening new configs first while that pays.
    pub screened: Vec<BudgetRun>,
    /// Regret difference the probe cannot resolve: the largest lead of the best final config
    /// over another that a rerun of the full probe overturns.
    pub resolution: f64,
}

/// A search of `scenario` with the default sampler and `seed` that stops before a trial would
/// overrun `budget_s`; with `screening`, new configs run the screening probe first while that
/// pays, and go on to the full probe when they pass.
pub fn budgeted(
    scenario: &Scenario,
    seed: u64,
    budget_s: f64,
    screening: Option<&ScreeningSettings>,
) -> anyhow::Result<BudgetRun> {
    let mut sampler = from_name(DEFAULT_SAMPLER, seed)?;
    let mut records: Vec<TrialRecord> = Vec::new();
    let mut run = BudgetRun {
        steps: Vec::new(),
        full_trials: 0,
        screening_probe_s: 0.0,
        full_probe_s: 0.0,
        best_params: None,
    };
    let mut last = Step {
        spent_s: 0.0,
        probe_s: 0.0,
        best: None,
    };
    // Feasible full-probe values as the search measured them, by config.
    let mut measured: Vec<(f64, Params)> = Vec::new();
    let mut promotion: Option<u32> = None;
    loop {
        let seconds = |r: &TrialRecord| r.metrics.get("duration_s").copied().unwrap_or(0.0);
        let (startup, mut record) = match promotion.take() {
            Some(number) if screening.is_some_and(|s| s.in_place) => {
                let screened = &records[number as usize];
                (0.0, scenario.went_on_at(records.len(), screened))
            }
            Some(number) => {
                let params = records[number as usize].params.clone();
                let startup = scenario.evaluator.startup_seconds(&params);
                let record = TrialRecord {
                    promoted_from: Some(number),
                    ..scenario.trial_at(records.len(), params, None)
                };
                (startup, record)
            }
            None => {
                let params = sampler
                    .ask(&*scenario.space, &records)
                    .with_context(|| format!("{}: at trial {}", scenario.name, records.len()))?;
                let slos = scenario.objective.slos();
                let fidelity = screening
                    .filter(|s| screening_pays(s, slos, &records))
                    .map(|s| s.fraction);
                let startup = scenario.evaluator.startup_seconds(&params);
                (startup, scenario.trial_at(records.len(), params, fidelity))
            }
        };
        let mut probe = added_probe_seconds(&record, &records).unwrap_or(0.0);
        if let Some(settings) = screening.filter(|_| !record.is_full_probe()) {
            let bar = promotion_bar(settings, scenario.objective.slos(), &records)
                .and_then(|score| Bar::of(scenario.objective.spec(), score));
            if let Some(bar) = bar {
                probe = cut_short(&mut record, probe, &bar);
            }
        }
        if last.spent_s + startup + probe > budget_s {
            return Ok(run);
        }
        last.spent_s += startup + probe;
        last.probe_s += probe;
        if record.is_full_probe() {
            run.full_trials += 1;
            run.full_probe_s += seconds(&record);
            if let (true, Some(v)) = (record.is_feasible(), record.value) {
                if !measured.iter().any(|(_, p)| *p == record.params) {
                    measured.push((v, record.params.clone()));
                }
                if let Some((best, params)) = revalidated(scenario, &mut measured) {
                    last.best = Some(best);
                    run.best_params = Some(params);
                }
            }
        } else {
            run.screening_probe_s += probe;
        }
        records.push(record);
        let landed = &records[records.len() - 1];
        if let Some(settings) = screening.filter(|_| !landed.is_full_probe()) {
            if promotes(settings, scenario.objective.slos(), landed, &records) {
                promotion = Some(landed.number);
            }
        }
        run.steps.push(last);
    }
}

/// Configs a study re-validates at its end (`search.revalidate_top`'s default).
const REVALIDATED: usize = 3;

/// The winner of a study whose search `measured` these values (sorted here, best first): of
/// the [`REVALIDATED`] best, the one whose own full probe reads highest, as re-validation picks
/// it, and that value. A full probe that went on from a screening run reads its config a little
/// differently from one of its own.
fn revalidated(scenario: &Scenario, measured: &mut [(f64, Params)]) -> Option<(f64, Params)> {
    measured.sort_by(|a, b| b.0.total_cmp(&a.0));
    measured
        .iter()
        .take(REVALIDATED)
        .filter_map(|(_, params)| Some((scenario.full_value(params)?, params)))
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(value, params)| (value, params.clone()))
}

/// Probe seconds of the screening run `record` (which lasted `seconds` in full) when the study
/// cuts it short once it can no longer beat `bar`, and the record as the study keeps it then.
/// The simulator's requests all reach their `max_tokens`, so its throughput times its duration
/// is what the study bounds the run by; what a cut run measured so far is taken to be what it
/// measures in full (a steady state).
fn cut_short(record: &mut TrialRecord, seconds: f64, bar: &Bar) -> f64 {
    let Some(value) = record.value.filter(|v| *v > 0.0) else {
        return seconds;
    };
    match bar.cut_after(value * seconds) {
        Some((cut, reason)) if cut < seconds => {
            record.outcome = Outcome::Pruned {
                reason: reason.clone(),
            };
            record.violations.push(Violation::Pruned { reason });
            record.metrics.insert("duration_s".to_string(), cut);
            cut
        }
        _ => seconds,
    }
}

/// Full-probe and screened searches of `scenario` for every seed of `config`, judged against
/// `optimum` (raised to anything they find).
pub fn compare(
    scenario: &Scenario,
    optimum: f64,
    config: &ScreenConfig,
) -> anyhow::Result<ScreenResult> {
    let jobs: Vec<(u64, bool)> = (0..config.seeds)
        .flat_map(|seed| [(seed, false), (seed, true)])
        .collect();
    let runs = pool::map(&jobs, config.threads, |&(seed, screened)| {
        let screening = screened.then_some(&config.settings);
        budgeted(scenario, seed, config.budget_s, screening)
    });
    let (mut full, mut screened) = (Vec::new(), Vec::new());
    for (run, (_, is_screened)) in runs.into_iter().zip(&jobs) {
        if *is_screened {
            screened.push(run?);
        } else {
            full.push(run?);
        }
    }
    let found = full
        .iter()
        .chain(&screened)
        .filter_map(|r| r.steps.last().and_then(|s| s.best))
        .fold(optimum, f64::max);
    let finals: Vec<(f64, &Params)> = full
        .iter()
        .chain(&screened)
        .filter_map(|r| Some((r.steps.last()?.best?, r.best_params.as_ref()?)))
        .collect();
    Ok(ScreenResult {
        name: scenario.name.clone(),
        optimum: found,
        resolution: resolution(scenario, &finals) / found,
        full,
        screened,
    })
}

/// Reruns of the full probe that [`resolution`] compares configs on.
const RERUNS: u64 = 4;

/// The largest difference in value (first runs) between the best of `finals` (value and
/// config) and another of them that some rerun of the full probe (another draw of the engine's
/// noise, the same draw for both) measures at least as high: below it, which config is better
/// depends on the run. 0 when the reruns rank the best above every other.
fn resolution(scenario: &Scenario, finals: &[(f64, &Params)]) -> f64 {
    let Some(&(top, best)) = finals.iter().max_by(|a, b| a.0.total_cmp(&b.0)) else {
        return 0.0;
    };
    let best_reruns: Vec<Option<f64>> = (1..=RERUNS)
        .map(|rerun| scenario.rerun_value(best, rerun))
        .collect();
    let overtakes = |params: &Params| {
        (1..=RERUNS).zip(&best_reruns).any(|(rerun, best_rerun)| {
            match (scenario.rerun_value(params, rerun), best_rerun) {
                (Some(v), Some(b)) => v >= *b,
                (Some(_), None) => true,
                (None, _) => false,
            }
        })
    };
    let mut distinct: Vec<(f64, &Params)> = Vec::new();
    for &(value, params) in finals {
        if params != best && distinct.iter().all(|(_, p)| *p != params) {
            distinct.push((value, params));
        }
    }
    distinct
        .iter()
        .filter(|(_, params)| overtakes(params))
        .map(|(value, _)| top - value)
        .fold(0.0, f64::max)
}

/// Regret within which two configs are as good as each other in practice: a real probe's
/// repeats differ by more.
const PRACTICAL_REGRET: f64 = 0.005;

impl BudgetRun {
    /// Mean probe seconds of a screening run over those of a full probe (NaN without both).
    fn screening_cost(&self) -> f64 {
        let screening = self.steps.len() - self.full_trials;
        let full_s = self.full_probe_s / self.full_trials as f64;
        self.screening_probe_s / screening as f64 / full_s
    }
}

impl ScreenResult {
    /// Relative regret of a best value.
    fn regret(&self, best: Option<f64>) -> f64 {
        best.map_or(1.0, |b| ((self.optimum - b) / self.optimum).max(0.0))
    }

    /// Median final regret of `runs`.
    fn final_regret(&self, runs: &[BudgetRun]) -> f64 {
        let finals: Vec<f64> = runs
            .iter()
            .map(|r| self.regret(r.steps.last().and_then(|s| s.best)))
            .collect();
        median(&finals)
    }

    /// Seconds each of `runs` spends before its regret is at most `target` (infinite for a run
    /// that never gets there): probe seconds, or with `wall` start-ups and probes.
    fn seconds_to(&self, runs: &[BudgetRun], target: f64, wall: bool) -> Vec<f64> {
        runs.iter()
            .map(|r| {
                r.steps
                    .iter()
                    .find(|s| self.regret(s.best) <= target)
                    .map_or(f64::INFINITY, |s| if wall { s.spent_s } else { s.probe_s })
            })
            .collect()
    }
}

/// The comparisons as a Markdown table, with the ratios over all scenarios.
pub fn table(results: &[ScreenResult], config: &ScreenConfig) -> String {
    let mut out = format!(
        "Screening ({:.0}% of the probe, best {:.0}% go on{}) under a {:.1} h budget per search, \
         {} seeds, each search's winner picked among its {REVALIDATED} best by their own full \
         probes: probe seconds until within the full-probe search's final median regret \
         (exactly, and give or take the probe's resolution: the largest regret difference \
         between two final configs that one of {RERUNS} reruns of the full probe ranks the \
         other way), and until within {:.1}% of the optimum, that also counting start-ups; a \
         screening run's probe seconds over a full run's. Over all scenarios, each ratio has in \
         brackets the range that 90% of bootstrap draws of the seeds give (each scenario's \
         searches drawn again with replacement).\n\n\
         | scenario | final regret full / screened | probe resolution | trials (full probes) \
         full / screened | probe s to that regret full / screened | ratio | probe s to it give \
         or take the resolution | ratio | probe s to {:.1}% | ratio | start-up and probe s to \
         it | ratio | screening run cost |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
        config.settings.fraction * 100.0,
        config.settings.keep * 100.0,
        if config.settings.in_place {
            ", promoted in place"
        } else {
            ""
        },
        config.budget_s / 3600.0,
        config.seeds,
        PRACTICAL_REGRET * 100.0,
        PRACTICAL_REGRET * 100.0,
    );
    let mut samples: [Vec<(Vec<f64>, Vec<f64>)>; 4] = Default::default();
    for r in results {
        let target = r.final_regret(&r.full);
        let practical = PRACTICAL_REGRET.max(target);
        let targets = [
            (target, false),
            (target + r.resolution, false),
            (practical, false),
            (practical, true),
        ];
        let mut cells = Vec::new();
        for (sample, (to, wall)) in samples.iter_mut().zip(targets) {
            let runs = (
                r.seconds_to(&r.full, to, wall),
                r.seconds_to(&r.screened, to, wall),
            );
            let (full, screened) = (lower_median(runs.0.clone()), lower_median(runs.1.clone()));
            sample.push(runs);
            cells.push(format!(
                "{full:.0} / {screened:.0} | {:.2}×",
                full / screened
            ));
        }
        let trials = |runs: &[BudgetRun]| {
            let all: Vec<f64> = runs.iter().map(|r| r.steps.len() as f64).collect();
            let full: Vec<f64> = runs.iter().map(|r| r.full_trials as f64).collect();
            format!("{:.0} ({:.0})", median(&all), median(&full))
        };
        let costs: Vec<f64> = r.screened.iter().map(BudgetRun::screening_cost).collect();
        out.push_str(&format!(
            "| {} | {:.3}% / {:.3}% | {:.3}% | {} / {} | {} | {:.2} |\n",
            r.name,
            target * 100.0,
            r.final_regret(&r.screened) * 100.0,
            r.resolution * 100.0,
            trials(&r.full),
            trials(&r.screened),
            cells.join(" | "),
            median(&costs),
        ));
    }
    let all: Vec<String> = samples
        .iter()
        .map(|sample| {
            let (full, screened) = sample.iter().fold((0.0, 0.0), |(f, s), runs| {
                let (full, screened) = (lower_median(runs.0.clone()), lower_median(runs.1.clone()));
                (f + full, s + screened)
            });
            let (lo, hi) = ratio_interval(sample, lower_median);
            format!(
                "{full:.0} / {screened:.0} | **{:.2}×** ({lo:.2}–{hi:.2}×)",
                full / screened
            )
        })
        .collect();
    out.push_str(&format!("| all | | | | {} | |\n", all.join(" | ")));
    out
}

/// The middle value of `values`, the lower of the two middle ones for an even count (so half
/// the runs reaching a target is enough).
pub(super) fn lower_median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values
        .get(values.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::super::tests::scenario_of;
    use super::super::{Evaluator, StartupFailure};
    use super::*;
    use crate::record::{MetricMap, Value};

    fn step(probe_s: f64) -> Step {
        Step {
            spent_s: probe_s,
            probe_s,
            best: None,
        }
    }

    #[test]
    fn a_run_below_the_bar_is_cut_when_all_its_tokens_at_once_would_fall_short() {
        let bar = Bar::maximised("output_throughput", 1000.0).unwrap();
        let run = |value: f64| TrialRecord {
            value: Some(value),
            ..TrialRecord::new(1, Default::default(), Outcome::Feasible)
        };
        // 500 tok/s for 10 s: 5000 tokens, at most 1000 tok/s until 5 s have passed.
        let mut slow = run(500.0);
        assert!((cut_short(&mut slow, 10.0, &bar) - 5.0).abs() < 1e-9);
        assert!(matches!(slow.outcome, Outcome::Pruned { .. }), "{slow:?}");
        assert_eq!(slow.value, Some(500.0));
        let mut fast = run(1200.0);
        assert_eq!(cut_short(&mut fast, 10.0, &bar), 10.0);
        assert_eq!(fast.outcome, Outcome::Feasible);
    }

    /// Output throughput by config `x`: the first run's, then each rerun's.
    struct Reruns(Vec<(f64, [f64; RERUNS as usize])>);

    impl Reruns {
        fn metrics(&self, params: &Params, rerun: usize) -> MetricMap {
            let Some(Value::Int(x)) = params.get("x") else {
                panic!("{params:?}")
            };
            let (first, reruns) = self.0[*x as usize];
            let mut metrics = super::super::tests::metrics(1000.0, 384.0);
            let value = if rerun == 0 { first } else { reruns[rerun - 1] };
            metrics.insert("output_throughput".into(), value);
            metrics
        }
    }

    impl Evaluator for Reruns {
        fn evaluate(&self, params: &Params, _: Option<f64>) -> Result<MetricMap, StartupFailure> {
            Ok(self.metrics(params, 0))
        }

        fn rerun(&self, params: &Params, rerun: u64) -> Result<MetricMap, StartupFailure> {
            Ok(self.metrics(params, rerun as usize))
        }
    }

    fn config(x: i64) -> Params {
        Params::from([("x".to_string(), Value::Int(x))])
    }

    #[test]
    fn the_resolution_is_the_largest_lead_a_rerun_can_overturn() {
        let rerun_overtakes = vec![
            (100.0, [100.0; 4]),
            (99.9, [99.8, 100.1, 99.9, 99.9]),
            (99.0, [98.0, 99.5, 98.0, 98.0]),
        ];
        let (best, second, third) = (config(0), config(1), config(2));
        let finals = [
            (100.0, &best),
            (99.9, &second),
            (99.0, &third),
            (99.9, &second),
        ];
        let scenario = scenario_of("output_throughput", Box::new(Reruns(rerun_overtakes)));
        assert!((resolution(&scenario, &finals) - 0.1).abs() < 1e-9);
        let best_stays_ahead = vec![(100.0, [100.0; 4]), (99.9, [99.8; 4]), (99.0, [99.5; 4])];
        let scenario = scenario_of("output_throughput", Box::new(Reruns(best_stays_ahead)));
        assert_eq!(resolution(&scenario, &finals), 0.0);
    }

    #[test]
    fn the_winner_is_the_best_of_the_three_best_measured_by_its_own_full_probe() {
        let fresh = vec![
            (95.0, [95.0; 4]),
            (99.5, [99.5; 4]),
            (99.0, [99.0; 4]),
            (200.0, [200.0; 4]),
        ];
        let scenario = scenario_of("output_throughput", Box::new(Reruns(fresh)));
        let mut measured: Vec<(f64, Params)> = [97.0, 100.0, 98.0, 99.0]
            .into_iter()
            .zip([3, 0, 2, 1])
            .map(|(value, x)| (value, config(x)))
            .collect();
        let (value, params) = revalidated(&scenario, &mut measured).unwrap();
        // Measured best: configs 0, 1, 2; config 3 reads 200 but was measured fourth.
        assert_eq!((value, params), (99.5, config(1)));
    }

    /// A search that finds the optimum (100) after `probe_s` probe seconds and a 100 s start-up,
    /// on one trial.
    fn finds_it_after(probe_s: f64) -> BudgetRun {
        BudgetRun {
            steps: vec![Step {
                best: Some(100.0),
                spent_s: probe_s + 100.0,
                ..step(probe_s)
            }],
            full_trials: 1,
            screening_probe_s: 0.0,
            full_probe_s: probe_s,
            best_params: None,
        }
    }

    #[test]
    fn the_ratio_over_all_comes_with_the_range_of_its_bootstrap_draws() {
        let result = ScreenResult {
            name: "s".into(),
            optimum: 100.0,
            full: vec![finds_it_after(100.0), finds_it_after(300.0)],
            screened: vec![finds_it_after(50.0), finds_it_after(150.0)],
            resolution: 0.0,
        };
        let config = ScreenConfig {
            budget_s: 3600.0,
            seeds: 2,
            threads: 1,
            settings: ScreeningSettings::default(),
        };
        let text = table(&[result], &config);
        let all = text.lines().last().unwrap();
        // Lower medians 100 and 50; a draw's medians are either run of each side.
        assert_eq!(
            all.matches("100 / 50 | **2.00×** (0.67–6.00×)").count(),
            3,
            "{all}"
        );
        // With the start-ups: 200 and 400 against 150 and 250.
        assert!(all.contains("200 / 150 | **1.33×** (0.80–2.67×)"), "{all}");
    }

    #[test]
    fn a_screening_run_costs_its_share_of_a_full_run() {
        // Two screening runs of 10 s, one full probe of 40 s that went on from the second.
        let run = BudgetRun {
            steps: vec![step(10.0), step(20.0), step(50.0)],
            full_trials: 1,
            screening_probe_s: 20.0,
            full_probe_s: 40.0,
            best_params: None,
        };
        assert!((run.screening_cost() - 0.25).abs() < 1e-12);
    }
}
