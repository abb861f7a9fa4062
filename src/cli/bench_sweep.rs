//! `infertune bench --sweep`: the highest load at which every `--slo` holds (the knee), found by
//! the load search a study's trials use.

use super::bench_session::{describe, Session};
use crate::probe::loadsearch::{self, LoadKnob, LoadSearchSpec, Round};
use crate::probe::WorkloadSpec;
use anyhow::Result;

/// Searches from `base`'s load within `spec`, prints the knee and returns it.
pub fn run(
    session: &mut Session,
    base: &WorkloadSpec,
    spec: &LoadSearchSpec,
) -> Result<Option<f64>> {
    let mut broken = Vec::new();
    let rounds = loadsearch::search(spec, |load| {
        let workload = loadsearch::with_load(base, spec.over, load)?;
        let violations = session.run(&workload)?.violations.join("; ");
        if session.interrupted() {
            return Ok(None);
        }
        if violations.is_empty() {
            return Ok(Some(true));
        }
        broken.push((load, violations));
        Ok(Some(false))
    })?;
    let knee = loadsearch::best(&rounds);
    println!("{}", verdict(spec, base, &rounds, &broken));
    Ok(knee)
}

/// What the search found: the knee and the lowest load above it that broke an SLO, and why.
fn verdict(
    spec: &LoadSearchSpec,
    base: &WorkloadSpec,
    rounds: &[Round],
    broken: &[(f64, String)],
) -> String {
    let name = |load: f64| match loadsearch::with_load(base, spec.over, load) {
        Ok(w) => describe(&w.load).0,
        Err(_) => load.to_string(),
    };
    let knee = loadsearch::best(rounds);
    let above = broken
        .iter()
        .filter(|(load, _)| knee.is_none_or(|k| *load > k))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    let knob = match spec.over {
        LoadKnob::Concurrency => "concurrency",
        LoadKnob::Rate => "rate",
    };
    match (knee, above) {
        (Some(k), Some((load, why))) => format!(
            "Knee: {} holds every SLO; {} breaks: {why}",
            name(k),
            name(*load)
        ),
        (Some(k), None) if k >= spec.high => format!(
            "Knee: {} holds every SLO, the highest {knob} allowed (--sweep-max {})",
            name(k),
            spec.high
        ),
        (Some(k), None) => format!(
            "Knee: {} holds every SLO; the search stopped after {} runs (--sweep-runs)",
            name(k),
            rounds.len()
        ),
        (None, Some((load, why))) => {
            format!("No load holds every SLO: {} breaks: {why}", name(*load))
        }
        (None, None) => "No load was measured (interrupted)".to_string(),
    }
}
