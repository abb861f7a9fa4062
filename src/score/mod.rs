//! Scoring a probe's metrics: the objective value (a metric or a CEL expression of metrics) and
//! the SLO verdict with named violations, against the objective's SLOs and its implicit
//! error-rate bound.

pub mod runs;
pub mod select;
mod verdict;

pub use verdict::Verdict;

use crate::record::{metric, FailureKind, MetricMap, Outcome, Params, Slo, TrialRecord, Violation};
use crate::space::objective::{Direction, ObjectiveSpec};
use anyhow::Context as _;

/// An objective ready to score metrics.
pub struct Objective {
    spec: ObjectiveSpec,
    /// The spec's SLOs, the implicit error-rate bound included.
    slos: Vec<Slo>,
    primary: MetricExpr,
    secondary: Option<MetricExpr>,
}

/// The verdict on one probe run.
#[derive(Clone, Debug, PartialEq)]
pub struct Judgement {
    /// Objective value as the user states it.
    pub value: Option<f64>,
    /// The value oriented so that higher is better.
    pub score: Option<f64>,
    /// Broken SLOs with what was measured; empty when every SLO held.
    pub violations: Vec<Violation>,
}

impl Objective {
    /// Compile `spec`; a malformed expression is an error naming it.
    pub fn new(spec: &ObjectiveSpec) -> anyhow::Result<Objective> {
        let primary = MetricExpr::compile(&spec.metric).context("objective `metric`")?;
        let secondary = match &spec.secondary {
            Some(s) => Some(MetricExpr::compile(&s.metric).context("objective `secondary`")?),
            None => None,
        };
        Ok(Objective {
            spec: spec.clone(),
            slos: spec.slos(),
            primary,
            secondary,
        })
    }

    /// The spec it was built from.
    pub fn spec(&self) -> &ObjectiveSpec {
        &self.spec
    }

    /// The SLOs every feasible trial must meet (see [`ObjectiveSpec::slos`]).
    pub(crate) fn slos(&self) -> &[Slo] {
        &self.slos
    }

    /// Value and SLO verdict of `metrics`. A missing objective metric counts as a violation.
    pub(crate) fn judge(&self, metrics: &MetricMap) -> Judgement {
        let mut violations = self.violations(metrics);
        let value = match self.primary.eval(metrics) {
            Ok(v) => Some(v),
            Err(e) => {
                violations.push(Violation::Objective {
                    message: e.to_string(),
                });
                None
            }
        };
        Judgement {
            value,
            score: value.map(|v| self.spec.direction.orient(v)),
            violations,
        }
    }

    /// Named violations of the SLOs by `metrics` (an unmeasured SLO metric is a violation),
    /// the implicit error-rate bound included.
    pub fn violations(&self, metrics: &MetricMap) -> Vec<Violation> {
        self.slos
            .iter()
            .filter_map(|slo| slo.violation(metrics))
            .collect()
    }

    /// The second objective's value (as stated, not oriented), when one is set and computable.
    pub(crate) fn secondary_value(&self, metrics: &MetricMap) -> Option<f64> {
        self.secondary.as_ref()?.eval(metrics).ok()
    }

    /// The primary objective's direction.
    pub fn direction(&self) -> Direction {
        self.spec.direction
    }

    /// The metric the objective is, when it is a plain metric name (not an expression).
    pub(crate) fn metric_name(&self) -> Option<&str> {
        let text = self.primary.text.trim();
        (self.primary.variables.len() == 1 && self.primary.variables[0] == text).then_some(text)
    }
}

/// A metric name or a CEL expression over metric names.
struct MetricExpr {
    text: String,
    program: cel::Program,
    variables: Vec<String>,
}

impl MetricExpr {
    fn compile(text: &str) -> anyhow::Result<MetricExpr> {
        crate::space::expr::check_length(text).map_err(|m| anyhow::anyhow!("`{text}`: {m}"))?;
        let source = floats_for_int_literals(text);
        let program = cel::Program::compile(&source).map_err(|e| {
            anyhow::anyhow!("cannot parse `{text}`: {e} (write a metric name such as `output_throughput` or an expression such as `output_throughput / 8`)")
        })?;
        let mut variables: Vec<String> = program
            .references()
            .variables()
            .into_iter()
            .map(str::to_string)
            .collect();
        variables.sort();
        Ok(MetricExpr {
            text: text.to_string(),
            program,
            variables,
        })
    }

    fn eval(&self, metrics: &MetricMap) -> Result<f64, String> {
        let mut context = cel::Context::default();
        for name in &self.variables {
            let value = metrics
                .get(name)
                .ok_or_else(|| format!("metric `{name}` of `{}` was not measured", self.text))?;
            context.add_variable_from_value(name.as_str(), *value);
        }
        context
            .add_function("max", |a: f64, b: f64| a.max(b))
            .and_then(|()| context.add_function("min", |a: f64, b: f64| a.min(b)))
            .map_err(|e| format!("cannot declare max()/min(): {e}"))?;
        match self.program.execute(&context) {
            Ok(cel::Value::Float(v)) if v.is_finite() => Ok(v),
            Ok(cel::Value::Int(v)) => Ok(v as f64),
            Ok(other) => Err(format!("`{}` gave {other:?}, not a number", self.text)),
            Err(e) => Err(format!("cannot evaluate `{}`: {e}", self.text)),
        }
    }
}

/// CEL does not mix ints and doubles (`x / 8` fails for a double `x`), and every metric is a
/// double, so integer literals outside string literals become doubles (`8` → `8.0`).
fn floats_for_int_literals(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 8);
    let mut i = 0;
    let mut quote: Option<char> = None;
    while i < chars.len() {
        let c = chars[i];
        if let Some(q) = quote {
            out.push(c);
            if c == '\\' && i + 1 < chars.len() {
                out.push(chars[i + 1]);
                i += 1;
            } else if c == q {
                quote = None;
            }
            i += 1;
            continue;
        }
        if c == '"' || c == '\'' {
            quote = Some(c);
            out.push(c);
            i += 1;
            continue;
        }
        let starts_number = c.is_ascii_digit() && (i == 0 || !is_word_or_dot(chars[i - 1]));
        if !starts_number {
            out.push(c);
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && chars[i].is_ascii_digit() {
            i += 1;
        }
        out.extend(&chars[start..i]);
        let next = chars.get(i).copied();
        if !matches!(next, Some(n) if is_word_or_dot(n)) {
            out.push_str(".0");
        }
    }
    out
}

fn is_word_or_dot(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.'
}

/// The record of trial `number` of `params` as a study records a run of it: failed with its
/// kind and message when it did not start, else its metrics judged by `objective`.
pub fn record_run(
    objective: &Objective,
    number: u32,
    params: Params,
    measured: Result<MetricMap, (FailureKind, String)>,
) -> TrialRecord {
    let metrics = match measured {
        Ok(metrics) => metrics,
        Err((kind, message)) => {
            return TrialRecord::new(number, params, Outcome::Failed { kind, message })
        }
    };
    let verdict = Verdict::of(objective, &metrics, None);
    verdict.apply(TrialRecord {
        metrics,
        ..TrialRecord::new(number, params, Outcome::Feasible)
    })
}

/// The metrics `objective` is judged on: its stage's when it names one (none when the probe
/// measured no such stage, so its metrics read as not measured), else the whole run's.
pub(crate) fn judged_metrics<'a>(
    objective: &Objective,
    metrics: &'a MetricMap,
    stages: &'a [MetricMap],
) -> &'a MetricMap {
    static NONE: MetricMap = MetricMap::new();
    match objective.spec.stage {
        Some(stage) => stages.get(stage as usize).unwrap_or(&NONE),
        None => metrics,
    }
}

pub(crate) fn nothing_completed(metrics: &MetricMap) -> Option<Violation> {
    (metrics.get(metric::COMPLETED) == Some(&0.0)).then_some(Violation::NothingCompleted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::parse_slos as parse_list;

    fn spec(metric: &str, slos: &str) -> ObjectiveSpec {
        ObjectiveSpec {
            direction: Direction::Maximize,
            metric: metric.into(),
            subject_to: parse_list(slos).unwrap(),
            secondary: None,
            load_search: None,
            stage: None,
        }
    }

    fn metrics(pairs: &[(&str, f64)]) -> MetricMap {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn an_objective_on_a_stage_is_judged_on_that_stage_alone() {
        let whole = metrics(&[("output_throughput", 300.0), ("error_rate", 0.0)]);
        let stages = [
            metrics(&[("output_throughput", 100.0), ("error_rate", 0.0)]),
            metrics(&[("output_throughput", 500.0), ("error_rate", 0.25)]),
        ];
        let mut on = spec("output_throughput", "");
        on.stage = Some(1);
        let o = Objective::new(&on).unwrap();
        let j = o.judge(judged_metrics(&o, &whole, &stages));
        assert_eq!(j.value, Some(500.0));
        assert_eq!(j.violations.len(), 1, "{:?}", j.violations);
        on.stage = Some(2);
        let o = Objective::new(&on).unwrap();
        let j = o.judge(judged_metrics(&o, &whole, &stages));
        assert_eq!(j.value, None);
        let o = Objective::new(&spec("output_throughput", "")).unwrap();
        assert_eq!(
            o.judge(judged_metrics(&o, &whole, &stages)).value,
            Some(300.0)
        );
    }

    #[test]
    fn expression_with_integer_literals_evaluates() {
        let o = Objective::new(&spec("output_throughput / 8 + max(1, x) * 2", "")).unwrap();
        let j = o.judge(&metrics(&[
            ("output_throughput", 800.0),
            ("x", 3.0),
            ("error_rate", 0.0),
        ]));
        assert_eq!(j.value, Some(106.0));
        assert!(j.violations.is_empty());
    }

    #[test]
    fn violations_are_named_with_the_measured_value() {
        let o = Objective::new(&spec(
            "output_throughput",
            "ttft:p99<=2s,tpot:p99<=50ms,error_rate<=1%",
        ))
        .unwrap();
        let j = o.judge(&metrics(&[
            ("output_throughput", 10.0),
            ("p99_ttft_ms", 3120.0),
            ("p99_tpot_ms", 20.0),
            ("error_rate", 0.05),
        ]));
        let texts: Vec<String> = j.violations.iter().map(|v| v.to_string()).collect();
        assert_eq!(
            texts,
            vec!["ttft:p99<=2000ms (was 3120ms)", "error_rate<=1% (was 5%)"]
        );
        assert_eq!(j.value, Some(10.0));
    }

    #[test]
    fn any_failed_request_breaks_the_implicit_error_rate_bound() {
        let o = Objective::new(&spec("output_throughput", "ttft:p99<=2s")).unwrap();
        let judged = |error_rate: f64| {
            o.judge(&metrics(&[
                ("output_throughput", 10.0),
                ("p99_ttft_ms", 100.0),
                ("error_rate", error_rate),
            ]))
            .violations
        };
        assert_eq!(judged(0.0), vec![]);
        let texts: Vec<String> = judged(0.125).iter().map(|v| v.to_string()).collect();
        assert_eq!(texts, vec!["error_rate<=0% (was 12.5%)"]);
        let unmeasured = o.violations(&metrics(&[("p99_ttft_ms", 100.0)]));
        assert_eq!(unmeasured[0].to_string(), "error_rate<=0% (not measured)");
    }

    #[test]
    fn an_explicit_error_rate_bound_replaces_the_implicit_one() {
        let o = Objective::new(&spec("output_throughput", "error_rate<=20%")).unwrap();
        let judged = |error_rate: f64| {
            let m = metrics(&[("output_throughput", 10.0), ("error_rate", error_rate)]);
            let texts: Vec<String> = o
                .judge(&m)
                .violations
                .iter()
                .map(|v| v.to_string())
                .collect();
            texts
        };
        assert_eq!(judged(0.125), Vec::<String>::new());
        assert_eq!(judged(0.25), vec!["error_rate<=20% (was 25%)"]);
    }

    #[test]
    fn minimize_negates_the_score_and_missing_metrics_are_violations() {
        let mut s = spec("p99_e2el_ms", "");
        s.direction = Direction::Minimize;
        let o = Objective::new(&s).unwrap();
        let j = o.judge(&metrics(&[("p99_e2el_ms", 40.0), ("error_rate", 0.0)]));
        assert_eq!(j.score, Some(-40.0));
        let missing = o.judge(&metrics(&[("error_rate", 0.0)]));
        assert_eq!(missing.value, None);
        assert!(
            missing.violations[0].to_string().contains("`p99_e2el_ms`"),
            "{missing:?}"
        );
    }

    #[test]
    fn a_malformed_expression_is_an_error_with_a_hint() {
        let e = Objective::new(&spec("output_throughput /", ""))
            .err()
            .unwrap();
        assert!(format!("{e:#}").contains("expression such as"), "{e:#}");
    }

    #[test]
    fn literals_inside_names_and_strings_stay() {
        assert_eq!(
            floats_for_int_literals("p99_ttft_ms * 2"),
            "p99_ttft_ms * 2.0"
        );
        assert_eq!(
            floats_for_int_literals("1.5 + 'a1' + 3e2"),
            "1.5 + 'a1' + 3e2"
        );
    }
}
