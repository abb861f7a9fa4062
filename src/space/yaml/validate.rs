//! Checks that need the whole space: expressions name only known parameters, and some config
//! satisfies the constraints.

use super::Spots;
use crate::space::error::{thousands, Pos};
use crate::space::{expr, sample, ParamKind, StudySpec};
use crate::util::did_you_mean;

/// Configs sampled to check that the constraints can be met.
const SATISFIABILITY_SAMPLES: usize = 10_000;

/// Validates expressions and satisfiability; the error says where and what.
pub(crate) fn validate(space: &StudySpec, spots: &Spots) -> Result<(), (Pos, String)> {
    let names: Vec<&str> = space.parameters.iter().map(|p| p.name.as_str()).collect();
    for (i, def) in space.parameters.iter().enumerate() {
        let at = spots.param_exprs[i].unwrap_or(spots.params[i]);
        let earlier = &names[..i];
        if let ParamKind::Derived { expr: e } = &def.kind {
            check_reads(
                e,
                earlier,
                &names,
                &format!("derived parameter `{}`", def.name),
            )
            .map_err(|m| (at, m))?;
        }
        if let Some(w) = &def.when {
            check_reads(
                w,
                earlier,
                &names,
                &format!("`when` of parameter `{}`", def.name),
            )
            .map_err(|m| (at, m))?;
        }
    }
    for (c, at) in space.constraints.iter().zip(&spots.constraints) {
        check_reads(&c.expr, &names, &names, &format!("constraint `{}`", c.name))
            .map_err(|m| (*at, m))?;
    }
    crate::probe::preflight::check(&space.probe)
        .map_err(|e| (spots.probe, format!("probe: {e:#}")))?;
    check_stage(space).map_err(|m| (spots.objective, m))?;
    satisfiable(space, spots)
}

/// An objective that names a stage names one the probe's load has.
fn check_stage(space: &StudySpec) -> Result<(), String> {
    let Some(stage) = space.objective.stage else {
        return Ok(());
    };
    let stages = match &space.probe.load {
        crate::probe::LoadSpec::Stages { stages, .. } => stages.len(),
        _ => {
            return Err(format!(
                "objective.stage {stage}: the probe's load has no stages; use `load: {{kind: \
                 stages, stages: [...]}}` or remove `stage`"
            ))
        }
    };
    if stage as usize >= stages {
        return Err(format!(
            "objective.stage {stage} does not exist: the probe's load has {stages} stage{} \
             (numbered from 0, as `stage` in bench's JSON: 0 to {})",
            if stages == 1 { "" } else { "s" },
            stages - 1
        ));
    }
    Ok(())
}

/// `source` compiles and reads only names in `visible` (names in `all` but not visible are
/// declared too late).
fn check_reads(source: &str, visible: &[&str], all: &[&str], what: &str) -> Result<(), String> {
    let reads = expr::identifiers(source).map_err(|m| format!("{what}: {m}"))?;
    for name in reads {
        if visible.contains(&name.as_str()) {
            continue;
        }
        if all.contains(&name.as_str()) {
            return Err(format!(
                "{what} reads `{name}`, which is declared after it; declare `{name}` first"
            ));
        }
        let hint = did_you_mean(&name, all)
            .map(|h| format!("; did you mean `{h}`?"))
            .unwrap_or_default();
        return Err(format!(
            "{what}: unknown identifier `{name}` (not a parameter of this space){hint}"
        ));
    }
    Ok(())
}

fn satisfiable(space: &StudySpec, spots: &Spots) -> Result<(), (Pos, String)> {
    let computed = space
        .parameters
        .iter()
        .any(|p| p.when.is_some() || matches!(p.kind, ParamKind::Derived { .. }));
    if space.constraints.is_empty() && !computed {
        return Ok(());
    }
    let est = sample::estimate(
        &space.parameters,
        SATISFIABILITY_SAMPLES,
        space.search.seed,
        |s| space.complete(s),
    );
    if est.feasible > 0 {
        return Ok(());
    }
    let Some((rule, count)) = est.top_rejection() else {
        return Ok(());
    };
    let constraint = space.constraints.iter().position(|c| c.name == rule);
    let (at, what) = match constraint {
        Some(i) => (
            spots.constraints[i],
            format!("constraint `{rule}` ({})", space.constraints[i].expr),
        ),
        None => {
            let i = space.parameters.iter().position(|p| p.name == rule);
            (
                i.map_or(spots.parameters, |i| spots.params[i]),
                format!("parameter `{rule}`"),
            )
        }
    };
    let example = est
        .rejected_examples
        .iter()
        .find(|(_, r)| r.rule == rule)
        .map(|(_, r)| r.message.clone())
        .unwrap_or_default();
    Err((
        at,
        format!(
            "0 of {} sampled configs satisfy the constraints; {what} rejected {} of them ({example}); \
             widen the parameter ranges or relax the constraint",
            thousands(est.total),
            thousands(count)
        ),
    ))
}
