//! Completing a sampled config: consts, derived values, conditional parameters, constraints,
//! then the engine's rule pack.

use super::expr;
use super::rules;
use super::{
    batching, Batching, Feasibility, NumaCandidates, ParamDef, ParamKind, Rejection, StudySpec,
};
use crate::record::{Params, Value};

impl Feasibility for StudySpec {
    fn parameters(&self) -> &[ParamDef] {
        &self.parameters
    }

    fn resolve(&self, sampled: &Params) -> Result<Params, Rejection> {
        let mut config = self.complete(sampled)?;
        self.apply_rules(&mut config)?;
        Ok(config)
    }

    fn batching(&self) -> Option<Batching> {
        batching::of(self)
    }
}

impl StudySpec {
    /// Fills consts and derived values, drops parameters whose `when` is false (ignoring any
    /// sampled value for them) and applies the constraints; the rule pack is not consulted.
    /// A numa parameter without a sampled value means no binding (`"none"`).
    pub fn complete(&self, sampled: &Params) -> Result<Params, Rejection> {
        let mut config = Params::new();
        for def in &self.parameters {
            if !is_active(def, &config)? {
                continue;
            }
            let value = match &def.kind {
                ParamKind::Const { value } => value.clone(),
                ParamKind::Derived { expr: e } => expr::eval(e, &config)
                    .map_err(|m| reject(&def.name, format!("derived `{}`: {m}", def.name)))?,
                kind => sampled_value(def, kind, sampled)?,
            };
            config.insert(def.name.clone(), value);
        }
        for c in &self.constraints {
            let reads = expr::identifiers(&c.expr).map_err(|m| reject(&c.name, m))?;
            if reads.iter().any(|name| !config.contains_key(name)) {
                continue; // the constraint is about a parameter this config does not have
            }
            match expr::eval_bool(&c.expr, &config) {
                Ok(true) => {}
                Ok(false) => {
                    return Err(reject(
                        &c.name,
                        format!("constraint `{}` is false: {}", c.name, c.expr),
                    ))
                }
                Err(m) => return Err(reject(&c.name, format!("constraint `{}`: {m}", c.name))),
            }
        }
        Ok(config)
    }

    /// What to warn of before configs are checked: the rules are on but no engine version is
    /// known, so the newest rule pack applies (see [`rules::version_warning`]).
    pub(crate) fn rules_warning(&self) -> Option<String> {
        if !self.rules.enabled {
            return None;
        }
        rules::version_warning(
            self.rule_pack,
            self.engine.version.as_deref(),
            self.launch.command.as_deref(),
        )
    }

    /// The engine version rules apply to: the space's `engine.version`, else what the
    /// installed engine reports (see [`rules::detect_version`]).
    pub(crate) fn engine_version(&self) -> Option<String> {
        rules::effective_version(
            self.rule_pack,
            self.engine.version.as_deref(),
            self.launch.command.as_deref(),
        )
    }

    /// Applies the rule pack (repairing first when the space allows it).
    fn apply_rules(&self, config: &mut Params) -> Result<(), Rejection> {
        if !self.rules.enabled {
            return Ok(());
        }
        let version = self.engine_version();
        let platform = self.rules.platform.as_deref();
        if self.rules.repair {
            self.rule_pack
                .repair(version.as_deref(), platform, config, &self.rules.disable);
        }
        self.rule_pack
            .check_with(version.as_deref(), platform, config, &self.rules.disable)
    }
}

fn reject(rule: &str, message: String) -> Rejection {
    Rejection {
        rule: rule.to_string(),
        message,
    }
}

fn is_active(def: &ParamDef, config: &Params) -> Result<bool, Rejection> {
    let Some(cond) = &def.when else {
        return Ok(true);
    };
    let reads = expr::identifiers(cond).map_err(|m| reject(&def.name, m))?;
    if reads.iter().any(|name| !config.contains_key(name)) {
        return Ok(false); // it depends on a parameter that is itself inactive
    }
    expr::eval_bool(cond, config)
        .map_err(|m| reject(&def.name, format!("`when` of `{}`: {m}", def.name)))
}

fn sampled_value(def: &ParamDef, kind: &ParamKind, sampled: &Params) -> Result<Value, Rejection> {
    let Some(value) = sampled.get(&def.name) else {
        if matches!(kind, ParamKind::Numa { .. }) {
            return Ok(Value::Str("none".into()));
        }
        return Err(reject(
            &def.name,
            format!("no value for parameter `{}`", def.name),
        ));
    };
    let normalised = match kind {
        ParamKind::Int { .. } => value.as_i64().map(Value::Int),
        ParamKind::Float { .. } => value.as_f64().map(Value::Float),
        _ => Some(value.clone()),
    };
    let in_domain = match (kind, &normalised) {
        (
            ParamKind::Numa {
                candidates: NumaCandidates::Auto,
            },
            Some(Value::Str(_)),
        ) => true,
        (_, Some(v)) => kind.to_unit(v).is_some(),
        (_, None) => false,
    };
    match normalised {
        Some(v) if in_domain => Ok(v),
        _ => Err(reject(
            &def.name,
            format!("value `{value}` is outside the domain of `{}`", def.name),
        )),
    }
}
