//! `infertune sim validate`: the simulator against a file of real measurements.

use crate::sim::validate::{abs_error_pct, predict, read_truth, METRICS};
use crate::util::stats::median;
use anyhow::Context;
use serde_json::json;
use std::path::PathBuf;

/// `infertune sim validate`.
#[derive(clap::Args, Debug)]
pub(crate) struct ValidateArgs {
    /// Measurements, one load stage a row (the format of shared/data/sim-truth/h100-vllm.csv).
    #[arg(long)]
    truth: PathBuf,
    /// Folder of Hugging Face config.json files, each named after the last component of the
    /// CSV's `model` (`meta-llama/Llama-2-7b-hf` → `Llama-2-7b-hf.json`).
    #[arg(long)]
    model_configs: PathBuf,
    /// Card profile the measurements ran on.
    #[arg(long, default_value = "H100")]
    card: String,
    /// vLLM version measured (default: a current one).
    #[arg(long)]
    engine_version: Option<String>,
    /// Seed of the engine noise.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Print `{"rows": [{experiment, stage, overloaded, predicted}]}` instead of a table.
    #[arg(long)]
    json: bool,
}

/// Run `sim validate`.
pub fn run(args: &ValidateArgs) -> anyhow::Result<i32> {
    let rows = read_truth(&args.truth).map_err(anyhow::Error::msg)?;
    let mut predictions = Vec::new();
    for row in &rows {
        let p = predict(
            row,
            &args.model_configs,
            &args.card,
            args.engine_version.as_deref(),
            args.seed,
        )
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("{}", args.truth.display()))?;
        predictions.push(p);
    }
    if args.json {
        println!("{}", json!({ "rows": predictions }));
        return Ok(0);
    }
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::NOTHING);
    let mut header = vec!["experiment".to_string(), "stage".into()];
    for m in METRICS {
        header.extend([m.to_string(), "measured".into(), "err %".into()]);
    }
    header.extend(["overloaded".into(), "measured".into()]);
    table.set_header(header);
    let mut errors: Vec<Vec<f64>> = vec![Vec::new(); METRICS.len()];
    let mut wrong_overload = 0;
    for (row, p) in rows.iter().zip(&predictions) {
        let overloaded = row.measured_overloaded().map_err(anyhow::Error::msg)?;
        wrong_overload += usize::from(overloaded != p.overloaded);
        let mut cells = vec![row.experiment.clone(), row.stage.to_string()];
        for (i, m) in METRICS.iter().enumerate() {
            let predicted = p.predicted[*m];
            let measured = row.number(m).map_err(anyhow::Error::msg)?;
            let error = measured.map(|v| abs_error_pct(predicted, v));
            if let (Some(e), false) = (error, overloaded) {
                errors[i].push(e);
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
    for (m, e) in METRICS.iter().zip(errors) {
        println!("  {m:<13} {:>6.1} %  ({} rows)", median(&e), e.len());
    }
    println!(
        "overloaded predicted as measured: {}/{} rows",
        rows.len() - wrong_overload,
        rows.len()
    );
    Ok(0)
}
