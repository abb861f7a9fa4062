//! `trials.csv`: every trial, one row each: its number, status, role (baseline, the trial a
//! re-validation repeat runs again), objective value and score, violations, why it did not
//! count, timings, then its params (`param_*`) and metrics.

use crate::record::{Outcome, TrialRecord};
use std::collections::BTreeSet;

/// The status word of an outcome, as in the journal (`feasible`, `rejected`, ...).
pub fn status(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Feasible => "feasible",
        Outcome::Infeasible => "infeasible",
        Outcome::Rejected { .. } => "rejected",
        Outcome::Failed { .. } => "failed",
        Outcome::Crashed { .. } => "crashed",
        Outcome::Pruned { .. } => "pruned",
    }
}

/// Why a trial did not count: rejection rule and message, failure kind and message, how a
/// crashed server ended and its log's root cause, prune reason.
pub fn detail(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Feasible | Outcome::Infeasible => String::new(),
        Outcome::Rejected { rule, message } => format!("{rule}: {message}"),
        Outcome::Failed { kind, message } => format!("{kind}: {message}"),
        Outcome::Crashed { exit, message } if message.is_empty() => format!("{exit} while serving"),
        Outcome::Crashed { exit, message } => format!("{exit} while serving: {message}"),
        Outcome::Pruned { reason } => reason.clone(),
    }
}

/// Render `records` as CSV: fixed columns, then `param_<name>` and metric columns in name order.
pub fn render(records: &[TrialRecord]) -> anyhow::Result<String> {
    let params: BTreeSet<&str> = records
        .iter()
        .flat_map(|r| r.params.keys().map(String::as_str))
        .collect();
    let metrics: BTreeSet<&str> = records
        .iter()
        .flat_map(|r| r.metrics.keys().map(String::as_str))
        .collect();
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = [
        "number",
        "status",
        "baseline",
        "repeat_of",
        "value",
        "score",
        "violations",
        "detail",
        "ready_s",
        "wall_s",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    header.extend(params.iter().map(|p| format!("param_{p}")));
    header.extend(metrics.iter().map(|m| m.to_string()));
    w.write_record(&header)?;
    for r in records {
        let mut row = vec![
            r.id.number.to_string(),
            status(&r.outcome).to_string(),
            r.is_baseline().to_string(),
            opt(r.repeat_of()),
            opt(r.value),
            opt(r.score),
            r.violations_text(),
            detail(&r.outcome),
            opt(r.ready_s),
            format!("{:.3}", r.wall_s),
        ];
        row.extend(params.iter().map(|p| {
            r.params
                .get(*p)
                .map(ToString::to_string)
                .unwrap_or_default()
        }));
        row.extend(metrics.iter().map(|m| opt(r.metrics.get(*m))));
        w.write_record(&row)?;
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{TrialId, TrialKind, Value};

    #[test]
    fn columns_are_the_union_in_name_order() {
        let mut a = TrialRecord {
            metrics: [("output_throughput".to_string(), 10.5)].into(),
            value: Some(10.5),
            score: Some(10.5),
            id: TrialId {
                number: 0,
                kind: TrialKind::Baseline,
            },
            ready_s: Some(1.0),
            wall_s: 2.0,
            ..TrialRecord::new(
                0,
                [("b".to_string(), Value::Int(2))].into(),
                Outcome::Feasible,
            )
        };
        let mut b = a.clone();
        b.id.number = 1;
        b.params.insert("a".into(), Value::Str("x,y".into()));
        b.outcome = Outcome::Rejected {
            rule: "r".into(),
            message: "m".into(),
        };
        a.metrics.insert("p99_ttft_ms".into(), 5.0);
        let text = render(&[a, b]).unwrap();
        let mut lines = text.lines();
        assert_eq!(
            lines.next().unwrap(),
            "number,status,baseline,repeat_of,value,score,violations,detail,ready_s,wall_s,param_a,param_b,output_throughput,p99_ttft_ms"
        );
        assert_eq!(
            lines.next().unwrap(),
            "0,feasible,true,,10.5,10.5,,,1,2.000,,2,10.5,5"
        );
        assert_eq!(
            lines.next().unwrap(),
            "1,rejected,true,,10.5,10.5,,r: m,1,2.000,\"x,y\",2,10.5,"
        );
    }
}
