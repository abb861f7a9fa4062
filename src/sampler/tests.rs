//! The contract every sampler keeps, checked for each one: domains (bounds, steps, log scales,
//! choices), conditionals, constraints, no duplicates, determinism, batches, exhaustion.

use super::testkit::{feasible, mixed_space, record, FnSpaceBuilder};
use super::{from_name, from_name_with_prior, Prior};
use crate::record::{Outcome, Params, TrialRecord, Value};
use std::collections::HashSet;

/// A smooth score over the mixed space, so model-based samplers have something to follow.
fn score(p: &Params) -> f64 {
    let seqs = p["max_num_seqs"].as_f64().unwrap_or(1.0).log2();
    let util = p["gpu_memory_utilization"].as_f64().unwrap_or(0.0);
    -(seqs - 7.0).powi(2) + 10.0 * util
}

/// Runs `n` ask/tell rounds of sampler `name` on the mixed space.
fn run(name: &str, seed: u64, n: usize) -> Vec<TrialRecord> {
    let space = mixed_space();
    let mut sampler = from_name(name, seed).unwrap();
    let mut trials = Vec::new();
    for _ in 0..n {
        let p = sampler.ask(&space, &trials).unwrap();
        let s = score(&p);
        trials.push(feasible(p, s));
    }
    trials
}

fn check_domains(trials: &[TrialRecord]) {
    for t in trials {
        let p = &t.params;
        let seqs = p["max_num_seqs"].as_i64().unwrap();
        assert!((8..=1024).contains(&seqs), "max_num_seqs {seqs}");
        let mnbt = p["max_num_batched_tokens"].as_i64().unwrap();
        assert!(
            (1024..=16384).contains(&mnbt) && (mnbt - 1024) % 512 == 0,
            "{mnbt}"
        );
        assert!(mnbt >= seqs, "constraint broken: {p:?}");
        let util = p["gpu_memory_utilization"].as_f64().unwrap();
        assert!((0.5..=0.95 + 1e-9).contains(&util), "util {util}");
        assert!(
            ((util / 0.05) - (util / 0.05).round()).abs() < 1e-9,
            "util step {util}"
        );
        let delay = p["scheduler_delay"].as_f64().unwrap();
        assert!((0.001..=1.0).contains(&delay), "delay {delay}");
        let block = &p["block_size"];
        assert!([8, 16, 32].map(Value::Int).contains(block), "block {block}");
        let chunked = p["enable_chunked_prefill"].as_bool().unwrap();
        match p.get("max_num_partial_prefills") {
            Some(v) if chunked => assert!((1..=8).contains(&v.as_i64().unwrap())),
            None if !chunked => {}
            other => panic!("conditional broken: chunked={chunked}, partial={other:?}"),
        }
    }
}

fn check_unique(trials: &[TrialRecord]) {
    let keys: HashSet<String> = trials
        .iter()
        .map(|t| serde_json::to_string(&t.params).unwrap())
        .collect();
    assert_eq!(keys.len(), trials.len(), "a config was proposed twice");
}

/// Log-scaled parameters: early proposals reach the lowest decade of `max_num_seqs` (8..32 is
/// 29% of the log range, 2% of the linear one).
fn check_log_scale(trials: &[TrialRecord]) {
    let low = trials[..16]
        .iter()
        .filter(|t| t.params["max_num_seqs"].as_i64().unwrap() < 32)
        .count();
    assert!(low >= 2, "{low} of 16 early proposals below 32");
}

fn check_replay(name: &str) {
    let trials = run(name, 42, 14);
    for k in [0, 5, 9, 13] {
        let mut fresh = from_name(name, 42).unwrap();
        let again = fresh.ask(&mixed_space(), &trials[..k]).unwrap();
        assert_eq!(again, trials[k].params, "replay of trial {k} differs");
    }
}

fn check_batch(name: &str) {
    let space = mixed_space();
    let trials = run(name, 7, 10);
    let mut sampler = from_name(name, 7).unwrap();
    let batch = sampler.ask_n(&space, &trials, 5).unwrap();
    let mut all = trials.clone();
    all.extend(batch.into_iter().map(|p| feasible(p, 0.0)));
    assert_eq!(all.len(), 15);
    check_unique(&all);
    check_domains(&all);
}

fn check_exhaustion(name: &str) {
    let space = FnSpaceBuilder::new().boolean("flag").build();
    let mut sampler = from_name(name, 1).unwrap();
    let mut trials = Vec::new();
    for _ in 0..2 {
        let p = sampler.ask(&space, &trials).unwrap();
        trials.push(feasible(p, 1.0));
    }
    let err = sampler.ask(&space, &trials).unwrap_err().to_string();
    assert!(
        err.contains("no feasible untried config found after") && err.contains("exhausted"),
        "{err}"
    );
}

fn check_baseline_record(name: &str) {
    let space = mixed_space();
    let mut defaults = Params::new();
    defaults.insert("max_num_seqs".into(), Value::Int(256));
    defaults.insert("engine_only_flag".into(), Value::Str("x".into()));
    let mut base = record(defaults, Outcome::Feasible, Some(5.0));
    base.id.kind = crate::record::TrialKind::Baseline;
    let mut trials = vec![base];
    trials.extend(run(name, 3, 9));
    let mut sampler = from_name(name, 3).unwrap();
    let p = sampler.ask(&space, &trials).unwrap();
    check_domains(&[feasible(p, 0.0)]);
}

macro_rules! sampler_contract {
    ($module:ident, $name:literal) => {
        mod $module {
            use super::*;

            #[test]
            fn respects_bounds_steps_choices_conditionals_and_constraints() {
                check_domains(&run($name, 1, 40));
            }

            #[test]
            fn never_proposes_a_config_twice() {
                check_unique(&run($name, 2, 60));
            }

            #[test]
            fn samples_log_parameters_on_a_log_scale() {
                check_log_scale(&run($name, 5, 16));
            }

            #[test]
            fn same_seed_and_trials_give_the_same_proposal() {
                check_replay($name);
            }

            #[test]
            fn batch_proposals_are_distinct_and_valid() {
                check_batch($name);
            }

            #[test]
            fn exhausted_space_is_a_clear_error() {
                check_exhaustion($name);
            }

            #[test]
            fn copes_with_a_baseline_record() {
                check_baseline_record($name);
            }
        }
    };
}

sampler_contract!(grid, "grid");
sampler_contract!(random, "random");
sampler_contract!(qmc, "qmc");
sampler_contract!(tpe, "tpe");
sampler_contract!(pso, "pso");

#[test]
fn unknown_names_list_the_known_ones() {
    let err = from_name("cmaes", 0).err().unwrap().to_string();
    assert!(err.contains("unknown sampler `cmaes`") && err.contains("grid, random, qmc, tpe, pso"));
    assert!(from_name("default", 0).is_ok());
    assert!(from_name(" TPE ", 0).is_ok());
}
sampler_contract!(bo, "bo");

#[test]
fn only_bo_takes_a_warm_start() {
    let prior = Prior {
        trials: vec![feasible(Default::default(), 1.0)],
        weight: 0.5,
        refresh: None,
    };
    assert!(from_name_with_prior("bo", 0, prior.clone()).is_ok());
    let err = from_name_with_prior("tpe", 0, prior)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("search.sampler: bo"), "{err}");
    assert!(from_name_with_prior("tpe", 0, Prior::default()).is_ok());
}

#[test]
fn a_pending_proposal_stands_in_at_the_mean_score_so_far() {
    let trials: Vec<TrialRecord> = [10.0, 20.0, 60.0]
        .iter()
        .map(|&s| feasible(Params::new(), s))
        .collect();
    let seen = super::with_pending(&trials, &[Params::new()]);
    let pending = &seen[3];
    assert_eq!(pending.score, Some(30.0));
    assert_eq!(pending.violations, vec![crate::record::Violation::Pending]);
}
