//! Test fixtures: spaces with every parameter kind, conditionals and constraints, and records.

use crate::record::{FailureKind, Outcome, Params, TrialRecord, Value};
use crate::space::{Batching, Feasibility, ParamDef, ParamKind, Rejection};
use std::sync::Arc;

/// A predicate over a config.
type Check = Arc<dyn Fn(&Params) -> bool + Send + Sync>;

/// Builds an [`FnSpace`] whose resolve drops inactive conditionals and applies constraints.
#[derive(Default)]
pub(crate) struct FnSpaceBuilder {
    params: Vec<ParamDef>,
    conditions: Vec<(String, Check)>,
    constraints: Vec<(String, Check)>,
}

impl FnSpaceBuilder {
    /// An empty space.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an integer parameter.
    pub fn int(self, name: &str, low: i64, high: i64, step: Option<i64>, log: bool) -> Self {
        self.param(
            name,
            ParamKind::Int {
                low,
                high,
                step,
                log,
            },
        )
    }

    /// Adds a real parameter.
    pub fn float(self, name: &str, low: f64, high: f64, step: Option<f64>, log: bool) -> Self {
        self.param(
            name,
            ParamKind::Float {
                low,
                high,
                step,
                log,
            },
        )
    }

    /// Adds a choice parameter.
    pub fn choice(self, name: &str, values: Vec<Value>) -> Self {
        self.param(name, ParamKind::Choice { values })
    }

    /// Adds a bool parameter.
    pub(crate) fn boolean(self, name: &str) -> Self {
        self.param(name, ParamKind::Bool)
    }

    /// Adds a parameter `name` over `kind`.
    fn param(mut self, name: &str, kind: ParamKind) -> Self {
        self.params.push(param(name, kind));
        self
    }

    /// Makes the last parameter present only when `active` holds.
    pub fn when(mut self, active: impl Fn(&Params) -> bool + Send + Sync + 'static) -> Self {
        let last = self.params.last_mut().expect("a parameter before `when`");
        last.when = Some("condition".into());
        self.conditions.push((last.name.clone(), Arc::new(active)));
        self
    }

    /// Rejects configs where `valid` is false, naming the rule `name`.
    pub fn constraint(
        mut self,
        name: &str,
        valid: impl Fn(&Params) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.constraints.push((name.into(), Arc::new(valid)));
        self
    }

    /// The space.
    pub fn build(self) -> FnSpace {
        let (conditions, constraints) = (self.conditions, self.constraints);
        FnSpace::new(self.params, move |sampled| {
            let mut resolved = sampled.clone();
            for (name, active) in &conditions {
                if !active(sampled) {
                    resolved.remove(name);
                }
            }
            match constraints.iter().find(|(_, valid)| !valid(&resolved)) {
                Some((rule, _)) => Err(Rejection {
                    rule: rule.clone(),
                    message: format!("constraint `{rule}` is false"),
                }),
                None => Ok(resolved),
            }
        })
    }
}

/// Every parameter kind: log int, stepped int, stepped float, choice, bool, a conditional int,
/// and a constraint coupling two parameters.
pub(crate) fn mixed_space() -> FnSpace {
    FnSpaceBuilder::new()
        .int("max_num_seqs", 8, 1024, None, true)
        .int("max_num_batched_tokens", 1024, 16384, Some(512), false)
        .float("gpu_memory_utilization", 0.5, 0.95, Some(0.05), false)
        .float("scheduler_delay", 0.001, 1.0, None, true)
        .choice(
            "block_size",
            vec![Value::Int(8), Value::Int(16), Value::Int(32)],
        )
        .boolean("enable_chunked_prefill")
        .int("max_num_partial_prefills", 1, 8, None, false)
        .when(|p| p.get("enable_chunked_prefill") == Some(&Value::Bool(true)))
        .constraint("batched_tokens_ge_seqs", |p| {
            p["max_num_batched_tokens"].as_i64() >= p["max_num_seqs"].as_i64()
        })
        .build()
}

/// Two real parameters, `x` and `y`, over `[0, 1]`.
pub(crate) fn plane() -> FnSpace {
    FnSpaceBuilder::new()
        .float("x", 0.0, 1.0, None, false)
        .float("y", 0.0, 1.0, None, false)
        .build()
}

/// The config at `(x, y)` of [`plane`].
pub(crate) fn point(x: f64, y: f64) -> Params {
    Params::from([("x".into(), Value::Float(x)), ("y".into(), Value::Float(y))])
}

/// `x` of a config of [`plane`].
pub(crate) fn x_of(p: &Params) -> f64 {
    p["x"].as_f64().unwrap()
}

/// A trial record with `params`, `outcome` and `score`.
pub fn record(params: Params, outcome: Outcome, score: Option<f64>) -> TrialRecord {
    TrialRecord {
        value: score,
        score,
        ..TrialRecord::new(0, params, outcome)
    }
}

/// A feasible trial scoring `score`.
pub fn feasible(params: Params, score: f64) -> TrialRecord {
    record(params, Outcome::Feasible, Some(score))
}

/// A trial that ran out of memory at start-up.
pub fn oom(params: Params) -> TrialRecord {
    let outcome = Outcome::Failed {
        kind: FailureKind::Oom,
        message: "CUDA out of memory".into(),
    };
    record(params, outcome, None)
}

/// Completes and checks a sampled config, like `StudySpec`'s resolve.
pub(crate) type ResolveFn = dyn Fn(&Params) -> Result<Params, Rejection> + Send + Sync;

/// A space defined by `parameters` and a `resolve` closure.
pub(crate) struct FnSpace {
    parameters: Vec<ParamDef>,
    resolve: Box<ResolveFn>,
    batching: Option<Batching>,
}

impl FnSpace {
    /// A space over `parameters` whose configs are completed and checked by `resolve`.
    pub fn new(
        parameters: Vec<ParamDef>,
        resolve: impl Fn(&Params) -> Result<Params, Rejection> + Send + Sync + 'static,
    ) -> Self {
        FnSpace {
            parameters,
            resolve: Box::new(resolve),
            batching: None,
        }
    }

    /// The space, its batch formed as `batching` says.
    pub fn with_batching(self, batching: Batching) -> Self {
        FnSpace {
            batching: Some(batching),
            ..self
        }
    }
}

impl Feasibility for FnSpace {
    fn parameters(&self) -> &[ParamDef] {
        &self.parameters
    }

    fn resolve(&self, sampled: &Params) -> Result<Params, Rejection> {
        (self.resolve)(sampled)
    }

    fn batching(&self) -> Option<Batching> {
        self.batching.clone()
    }
}

/// A searchable parameter `name` over `kind`, with no condition, target or default.
pub fn param(name: &str, kind: ParamKind) -> ParamDef {
    ParamDef::new(name, kind)
}
