//! What a report says: summary, winner and its gain over the baseline, plots, failures by kind,
//! and every trial.

use super::{plots, StudyView};
use crate::export::{
    detail, gain_text, gain_verdict, mean_text, resolution_text, status, tied_text, Block, Chart,
};
use crate::record::Outcome;
use std::collections::BTreeMap;

/// The blocks of the report of `view`.
pub fn blocks(view: &StudyView<'_>) -> Vec<Block> {
    let spec = view.study.objective;
    let mut out = vec![
        Block::Heading(1, format!("Study {}", view.study.name)),
        Block::Para(summary(view)),
    ];
    if !view.study.warm_start.is_empty() {
        out.push(Block::Heading(2, "Warm start".into()));
        out.push(warm_start(view));
        out.extend(view.warm_start_trust.clone().map(Block::Para));
    }
    out.push(Block::Heading(2, "Winner".into()));
    out.extend(winner(view));
    if let Some(why) = why_it_wins(view) {
        out.push(Block::Heading(2, "Why the winner wins".into()));
        out.extend(why);
    }
    if let Some(twin) = &view.twin {
        out.push(Block::Heading(2, "The twin's predictions".into()));
        out.extend(twin_blocks(twin, &spec.metric));
    }
    if let Some(table) = super::importance::effects(view.records, &spec.metric) {
        out.push(Block::Heading(2, "What moved the objective".into()));
        out.push(Block::Para(
            "Each parameter's share of the variance of the search trials' objective, and the \
             mean objective of the trials at its best and at its worst value."
                .into(),
        ));
        out.push(table);
    }
    out.push(Block::Heading(2, "Plots".into()));
    let mut plot = |caption: &str, file: String, chart: Chart| {
        out.push(Block::Plot {
            caption: caption.to_string(),
            file,
            svg: chart.render(),
        });
    };
    plot(
        "Best value so far",
        "best-so-far.svg".into(),
        plots::best_so_far(view.records, spec, &view.partial),
    );
    plot(
        "Latency against throughput",
        "latency-throughput.svg".into(),
        plots::latency_throughput(view.records, spec),
    );
    if let Some(chart) = super::importance::chart(view.records, &spec.metric) {
        plot("Parameter importance", "importance.svg".into(), chart);
    }
    for (name, chart) in plots::params_vs_objective(view.records, spec, &view.partial) {
        plot(
            &format!("{name} against the objective"),
            format!("param-{}.svg", file_safe(&name)),
            chart,
        );
    }
    if let Some(chart) = plots::pareto(view.records, spec, &view.secondary) {
        plot("Pareto front", "pareto.svg".into(), chart);
    }
    if let Some(table) = super::slots::spread(view.records) {
        out.push(Block::Heading(2, "Slots".into()));
        out.push(Block::Para(
            "Trials ran on several slots at once; a slot whose runs of re-validated configs \
             measure far from their config's mean has a slower or faster card or node."
                .into(),
        ));
        out.push(table);
    }
    out.push(Block::Heading(2, "Failures by kind".into()));
    out.push(failures(view));
    out.push(Block::Heading(2, "Trials".into()));
    out.push(trials(view));
    out
}

fn summary(view: &StudyView<'_>) -> String {
    let spec = view.study.objective;
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    // Configs, as `search.trials` counts them.
    let configs: Vec<_> = view
        .records
        .iter()
        .filter(|r| r.repeat_of().is_none())
        .collect();
    for r in &configs {
        *counts.entry(status(&r.outcome)).or_default() += 1;
    }
    let repeats = view
        .records
        .iter()
        .filter(|r| r.repeat_of().is_some())
        .count();
    let slos: Vec<String> = spec.slos().iter().map(ToString::to_string).collect();
    let counts: Vec<String> = counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
    let per_device = if spec.per_device() {
        " (per accelerator: each trial's figure over the accelerators its launch took, \
         launch.devices_per_trial)"
    } else {
        ""
    };
    format!(
        "Engine {}, sampler {} (seed {}). Objective: {} {}{per_device}{}. Search trials: {} ({}); re-validation runs: {repeats}.",
        serde_json::to_value(view.study.engine)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        view.study.sampler,
        view.study.seed,
        spec.direction.as_str(),
        spec.metric,
        if slos.is_empty() { String::new() } else { format!(" subject to {}", slos.join(", ")) },
        configs.len(),
        counts.join(", "),
    )
}

fn winner(view: &StudyView<'_>) -> Vec<Block> {
    let Some(w) = &view.winner else {
        return vec![Block::Para("No trial met every SLO.".into())];
    };
    let mut text = format!(
        "Trial {}: {} = {}.",
        w.record.id.number,
        view.study.objective.metric,
        mean_text(w.mean, w.ci95, w.runs)
    );
    match (&w.baseline, w.gain_pct) {
        (Some(b), Some(g)) => {
            text.push_str(&format!(
                " Gain over the baseline (trial {}, {}): {}.",
                b.trial,
                mean_text(b.mean, b.ci95, b.runs),
                gain_text(g, w.gain_ci95)
            ));
            let is_baseline = b.trial == w.record.id.number;
            if let Some(said) = gain_verdict(is_baseline, g, w.gain_ci95) {
                text.push_str(&format!(" {said}"));
            }
            let verdict = view.study.verdict;
            if let Some(said) = resolution_text(verdict, is_baseline, w.gain_ci95, w.runs, b.runs) {
                text.push_str(&format!(" {said}"));
            }
        }
        _ => text.push_str(" No feasible baseline to compare with."),
    }
    if let Some(said) = tied_text(&w.tied) {
        text.push_str(&format!(" {said}"));
    }
    if let Some(said) = noise_text(view.records, view.between_starts) {
        text.push_str(&format!(" {said}"));
    }
    let mut out = vec![
        Block::Para(text),
        Block::Table {
            header: vec!["parameter".into(), "value".into()],
            rows: w
                .record
                .params
                .iter()
                .map(|(k, v)| vec![k.clone(), v.to_string()])
                .collect(),
        },
    ];
    if let Some(cmd) = &view.command {
        out.push(Block::Code(cmd.clone()));
    }
    out
}

/// Where the study's noise came from: the spread within one run (the median of the trials'
/// own relative standard errors) against `between`, the spread between runs of one config,
/// each on a new start of the server; `None` until some config ran twice.
fn noise_text(records: &[crate::record::TrialRecord], between: Option<f64>) -> Option<String> {
    let between = between?;
    let within: Vec<f64> = records
        .iter()
        .filter_map(crate::record::TrialRecord::relative_error)
        .collect();
    let pct = |v: f64| format!("{:.1}%", 100.0 * v);
    Some(match within.is_empty() {
        true => format!(
            "Noise: runs of one config on new starts of the server spread by {} (relative sd).",
            pct(between)
        ),
        false => {
            let within = crate::util::stats::median(&within);
            let dominant = if between > within {
                "new starts dominate"
            } else {
                "the runs themselves dominate"
            };
            format!(
                "Noise (relative sd): {} within one run, {} between runs of one config on new starts of the server: {dominant}.",
                pct(within),
                pct(between)
            )
        }
    })
}

/// The server's figures of the winner, the baseline and the other re-validated configs.
fn why_it_wins(view: &StudyView<'_>) -> Option<Vec<Block>> {
    let winner = view.winner.as_ref()?.record;
    let baseline = view.records.iter().find(|r| r.is_baseline());
    let revalidated: std::collections::BTreeSet<u32> =
        view.records.iter().filter_map(|r| r.repeat_of()).collect();
    let finalists: Vec<&crate::record::TrialRecord> = view
        .records
        .iter()
        .filter(|r| revalidated.contains(&r.id.number))
        .collect();
    super::why::blocks(winner, baseline, &finalists)
}

/// The earlier studies whose trials seeded the sampler, and what was taken from each.
fn warm_start(view: &StudyView<'_>) -> Block {
    Block::Table {
        header: [
            "earlier study",
            "trials reused",
            "dropped (other parameters)",
            "start-up failures carried over",
            "transfer weight",
        ]
        .map(String::from)
        .to_vec(),
        rows: view
            .study
            .warm_start
            .iter()
            .map(|s| {
                vec![
                    s.study.clone(),
                    s.reused.to_string(),
                    s.dropped.to_string(),
                    s.failures.to_string(),
                    s.weight.to_string(),
                ]
            })
            .collect(),
    }
}

/// What the twin predicted for each scored trial against what it measured, and a verdict.
fn twin_blocks(twin: &super::TwinPredictions, metric: &str) -> Vec<Block> {
    let median = twin.median_error_pct;
    let verdict = if median > twin.wrong_above_pct {
        format!(
            "The twin is wrong for this card and engine by more than {:.0}%: its ranking counts \
             for little here (the sampler sets its prior aside once the study's own trials \
             contradict it), so the study's own trials decide.",
            twin.wrong_above_pct
        )
    } else {
        "The twin followed this card and engine; its ranking was a fair first guess.".to_string()
    };
    let fitted = twin.calibrated.map_or(String::new(), |([c, b, h], after)| {
        format!(
            " Fitted to these trials, the card's figures read compute ×{c:.2}, bandwidth \
             ×{b:.2}, host ×{h:.2} (`infertune sim calibrate` fits the same from a file of \
             measurements); the twin's throughput and latencies are then off by {after:.1}% \
             (median)."
        )
    });
    vec![
        Block::Para(format!(
            "The digital twin ranked the space before the first trial (search.prior: twin). \
             Its prediction of `{metric}` for each scored trial against what the trial \
             measured: median error {median:.1}% over {} trials. {verdict}{fitted}",
            twin.rows.len()
        )),
        Block::Table {
            header: vec![
                "trial".into(),
                "predicted".into(),
                "measured".into(),
                "error %".into(),
            ],
            rows: twin
                .rows
                .iter()
                .map(|(n, p, m)| {
                    vec![
                        n.to_string(),
                        format!("{p:.1}"),
                        format!("{m:.1}"),
                        format!("{:+.1}", (p - m) / m * 100.0),
                    ]
                })
                .collect(),
        },
    ]
}

fn failures(view: &StudyView<'_>) -> Block {
    let mut by_kind: BTreeMap<String, (usize, String)> = BTreeMap::new();
    for r in view.records {
        let kind = match &r.outcome {
            Outcome::Feasible => continue,
            Outcome::Infeasible => "slo-violated".to_string(),
            Outcome::Rejected { rule, .. } => format!("rejected ({rule})"),
            Outcome::Failed { kind, .. } => format!("failed ({kind})"),
            Outcome::Crashed { .. } => "crashed while serving".to_string(),
            Outcome::Pruned { .. } => "pruned".to_string(),
        };
        let example = match &r.outcome {
            Outcome::Infeasible => r.violations_text(),
            other => detail(other),
        };
        let entry = by_kind.entry(kind).or_insert((0, example));
        entry.0 += 1;
    }
    Block::Table {
        header: vec!["kind".into(), "trials".into(), "example".into()],
        rows: by_kind
            .into_iter()
            .map(|(k, (n, e))| vec![k, n.to_string(), e])
            .collect(),
    }
}

fn trials(view: &StudyView<'_>) -> Block {
    Block::Table {
        header: ["trial", "status", "value", "note", "params"]
            .map(String::from)
            .to_vec(),
        rows: view
            .records
            .iter()
            .map(|r| {
                let mut note = match &r.outcome {
                    Outcome::Infeasible => r.violations_text(),
                    other => detail(other),
                };
                if r.is_baseline() {
                    note = format!("baseline {note}").trim().to_string();
                }
                if let Some(of) = r.repeat_of() {
                    note = format!("repeat of {of} {note}").trim().to_string();
                }
                let params: Vec<String> =
                    r.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
                vec![
                    r.id.number.to_string(),
                    status(&r.outcome).to_string(),
                    r.value.map(|v| format!("{v:.2}")).unwrap_or_default(),
                    note,
                    params.join(" "),
                ]
            })
            .collect(),
    }
}

fn file_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Params, TrialId, TrialKind, TrialRecord};

    fn run(number: u32, value: f64, half_width: f64) -> TrialRecord {
        TrialRecord {
            value: Some(value),
            score: Some(value),
            half_width: Some(half_width),
            ..TrialRecord::of(
                TrialId {
                    number,
                    kind: TrialKind::Search,
                },
                Params::new(),
                Outcome::Feasible,
            )
        }
    }

    #[test]
    fn the_report_says_which_noise_dominates() {
        let records = [run(0, 50.0, 0.98), run(1, 28.0, 0.55)];
        let starts = noise_text(&records, Some(0.2)).unwrap();
        assert!(
            starts.contains("1.0% within one run, 20.0% between"),
            "{starts}"
        );
        assert!(starts.ends_with("new starts dominate."), "{starts}");
        let runs = noise_text(&records, Some(0.001)).unwrap();
        assert!(runs.ends_with("the runs themselves dominate."), "{runs}");
        assert_eq!(noise_text(&records, None), None);
    }
}
