//! `infertune sim validate`: the simulator against a file of real measurements.

use super::sim_truth::TruthArgs;
use crate::sim::validate::{abs_error_pct, predict, Predicted, TruthRow};
use crate::util::stats::median;
use serde_json::json;
use std::collections::BTreeMap;

/// `infertune sim validate`.
#[derive(clap::Args, Debug)]
pub(crate) struct ValidateArgs {
    #[command(flatten)]
    truth: TruthArgs,
    /// Only the rows of this experiment (the CSV's `experiment`).
    #[arg(long)]
    experiment: Option<String>,
    /// Print `{"rows": [{experiment, stage, overloaded, predicted}]}` instead of a table.
    #[arg(long)]
    json: bool,
}

/// Run `sim validate`: every row the simulator can model is predicted and compared; a row it
/// cannot (an unknown architecture, a missing config.json, a setting it has no model of) is
/// listed with the reason and counted, and the rest go on. Exit status 1 when no row could be
/// modelled.
pub fn run(args: &ValidateArgs) -> anyhow::Result<i32> {
    let mut rows = args.truth.rows()?;
    if let Some(experiment) = &args.experiment {
        rows.retain(|r| &r.experiment == experiment);
        if rows.is_empty() {
            anyhow::bail!("no row of the truth file has experiment `{experiment}`");
        }
    }
    let target = args.truth.target(None);
    let mut predicted = Vec::new();
    let mut unmodelled = Vec::new();
    for row in &rows {
        match predict(row, &target) {
            Ok(p) => predicted.push((row, p)),
            Err(reason) => unmodelled.push(Unmodelled { row, reason }),
        }
    }
    let status = i32::from(predicted.is_empty());
    if args.json {
        let rows: Vec<_> = predicted.iter().map(|(_, p)| p).collect();
        let unmodelled: Vec<_> = unmodelled
            .iter()
            .map(|u| {
                json!({
                    "experiment": u.row.experiment,
                    "stage": u.row.stage,
                    "line": u.row.line,
                    "reason": u.reason,
                })
            })
            .collect();
        println!("{}", json!({ "rows": rows, "unmodelled": unmodelled }));
        return Ok(status);
    }
    print_table(&predicted)?;
    println!(
        "rows modelled: {} of {}; not modelled: {}",
        predicted.len(),
        rows.len(),
        unmodelled.len()
    );
    for u in &unmodelled {
        println!(
            "  {} stage {} (line {}): {}",
            u.row.experiment, u.row.stage, u.row.line, u.reason
        );
    }
    Ok(status)
}

/// A row the simulator cannot model, and why.
struct Unmodelled<'r> {
    row: &'r TruthRow,
    reason: String,
}

/// The table of predicted against measured, the median errors (over all rows and per
/// tensor-parallel size) and the overload agreement.
fn print_table(predicted: &[(&TruthRow, Predicted)]) -> anyhow::Result<()> {
    let Some((first, _)) = predicted.first() else {
        return Ok(());
    };
    let metrics = first.format.metrics();
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::NOTHING);
    let mut header = vec!["experiment".to_string(), "stage".into()];
    for m in metrics {
        header.extend([m.to_string(), "measured".into(), "err %".into()]);
    }
    header.extend(["overloaded".into(), "measured".into()]);
    table.set_header(header);
    let mut errors: Vec<Vec<f64>> = vec![Vec::new(); metrics.len()];
    let mut errors_by_tp: BTreeMap<u32, Vec<Vec<f64>>> = BTreeMap::new();
    let mut wrong_overload = 0;
    for (row, p) in predicted {
        let overloaded = row.measured_overloaded().map_err(anyhow::Error::msg)?;
        wrong_overload += usize::from(overloaded != p.overloaded);
        let tp = row.tp().map_err(anyhow::Error::msg)?;
        let mut cells = vec![row.experiment.clone(), row.stage.to_string()];
        for (i, m) in metrics.iter().enumerate() {
            let predicted = p.predicted[*m];
            let measured = row.number(m).map_err(anyhow::Error::msg)?;
            let error = measured.map(|v| abs_error_pct(predicted, v));
            if let (Some(e), false) = (error, overloaded) {
                errors[i].push(e);
                errors_by_tp
                    .entry(tp)
                    .or_insert_with(|| vec![Vec::new(); metrics.len()])[i]
                    .push(e);
            }
            cells.extend([
                format!("{predicted:.2}"),
                measured.map_or("-".into(), |v| format!("{v:.2}")),
                error.map_or("-".into(), |e| format!("{e:.1}")),
            ]);
        }
        cells.extend([p.overloaded.to_string(), overloaded.to_string()]);
        table.add_row(cells);
    }
    println!("{table}");
    println!("median abs error over rows measured not overloaded:");
    for (m, e) in metrics.iter().zip(errors) {
        println!("  {m:<16} {:>6.1} %  ({} rows)", median(&e), e.len());
    }
    println!("per tensor-parallel size:");
    for (tp, by_metric) in &errors_by_tp {
        let cells: Vec<String> = metrics
            .iter()
            .zip(by_metric)
            .map(|(m, e)| format!("{m} {:.1} % ({} rows)", median(e), e.len()))
            .collect();
        println!("  tp {tp}: {}", cells.join(", "));
    }
    println!(
        "overloaded predicted as measured: {}/{} rows",
        predicted.len() - wrong_overload,
        predicted.len()
    );
    Ok(())
}
