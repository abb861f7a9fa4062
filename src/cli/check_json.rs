//! `infertune check --json`: the check of a space as one JSON object (schema:
//! docs/machine-interface.md).

use super::check_twin::TwinCheck;
use crate::engine::expert::{ExpertConfig, NoExpert};
use crate::prior::twin::TwinView;
use crate::record::Params;
use crate::space::sample::Estimate;
use crate::space::StudySpec;
use serde_json::{json, Value as Json};

/// What a study of the space knows before its first trial.
pub(crate) struct Priors<'a> {
    pub expert: &'a Result<ExpertConfig, NoExpert>,
    pub twin: &'a TwinCheck,
}

/// The result of checking `space`: its identity, parameters, the feasibility estimate `est`,
/// the example configs with their launch commands (secrets masked), the expert config and the
/// twin prior.
pub(crate) fn result(
    space: &StudySpec,
    version: Option<&str>,
    notes: &[String],
    warnings: &[String],
    est: &Estimate,
    examples: &[(&Params, String)],
    priors: Priors<'_>,
) -> Json {
    let Priors { expert, twin } = priors;
    let expert = match expert {
        Ok(e) => json!({
            "params": e.params,
            "choices": e.choices.iter().map(|c| json!({"param": c.param, "value": c.value, "why": c.why})).collect::<Vec<_>>(),
            "dropped": e.dropped.iter().map(|(c, why)| json!({"param": c.param, "value": c.value, "why": why})).collect::<Vec<_>>(),
        }),
        Err(why) => json!({"none": why.to_string()}),
    };
    let twin = json!({
        "applies": twin.view.is_some(),
        "says": twin.line,
        "evaluated": twin.view.as_ref().map(|v| v.trials.len()),
        "predicted_feasible": twin.view.as_ref().map(TwinView::predicted_feasible),
        "first": twin.view.as_ref().map(|v| &v.first),
        "unmodelled": twin.view.as_ref().map(|v| &v.unmodelled),
    });
    let feasible = est.feasible > 0;
    json!({
        "exit_code": if feasible { 0 } else { 1 },
        "space": space.name,
        "origin": space.origin,
        "engine": {
            "kind": space.engine.kind,
            "version": version,
            "model": space.engine.model,
            "platform": space.rules.platform,
        },
        "parameters": space.parameters,
        "constraints": space.constraints.iter().map(|c| json!({"name": c.name, "expr": c.expr})).collect::<Vec<_>>(),
        "estimate": {
            "sampled": est.total,
            "feasible": est.feasible,
            "share": if est.total == 0 { 0.0 } else { est.feasible as f64 / est.total as f64 },
            "rejected_by": est.rejected_by,
        },
        "expert": expert,
        "twin": twin,
        "examples": examples.iter().map(|(params, command)| json!({"params": params, "command": command})).collect::<Vec<_>>(),
        "notes": notes,
        "warnings": warnings,
    })
}
