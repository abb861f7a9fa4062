//! `infertune sim eval`: one config (a table or JSON), or a JSON-lines file of configs.

use super::cli::EvalArgs;
use super::eval;
use crate::record::{MetricMap, Params};
use anyhow::Context;
use serde_json::json;
use std::io::{BufRead, Write};
use std::time::Instant;

/// Run `sim eval`; exit code 1 when the single config fails at start.
pub fn run(args: &EvalArgs) -> anyhow::Result<i32> {
    let workload = args.workload()?;
    let base: Params = args.target.set.iter().cloned().collect();
    let Some(path) = &args.configs else {
        let deployment = args.target.deployment(&base);
        return Ok(
            match eval(&deployment, &base, &workload, args.target.seed) {
                Ok(metrics) if args.json => {
                    println!("{}", json!({"metrics": metrics}));
                    0
                }
                Ok(metrics) => {
                    print_table(&metrics);
                    0
                }
                Err(f) if args.json => {
                    println!("{}", json!({"failure": f}));
                    1
                }
                Err(f) => {
                    eprintln!("sim eval: no run ({}): {}", f.kind, f.message);
                    1
                }
            },
        );
    };
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let started = Instant::now();
    let (mut total, mut failed) = (0, 0);
    let mut out = std::io::stdout().lock();
    for (index, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.with_context(|| format!("cannot read {}", path.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        let overrides: Params = serde_json::from_str(&line).with_context(|| {
            format!(
                "{}:{}: expected a JSON object of parameters, e.g. {{\"max_num_seqs\": 128}}",
                path.display(),
                index + 1
            )
        })?;
        let mut params = base.clone();
        params.extend(overrides);
        let deployment = args.target.deployment(&params);
        let record = match eval(&deployment, &params, &workload, args.target.seed) {
            Ok(metrics) => json!({"params": params, "metrics": metrics}),
            Err(f) => {
                failed += 1;
                json!({"params": params, "failure": f})
            }
        };
        total += 1;
        writeln!(out, "{record}")?;
    }
    eprintln!(
        "evaluated {total} configs in {:.2} s ({failed} failed at start)",
        started.elapsed().as_secs_f64()
    );
    Ok(0)
}

fn print_table(metrics: &MetricMap) {
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::NOTHING);
    table.set_header(["metric", "value"]);
    for (name, value) in metrics {
        table.add_row([name.clone(), format!("{value:.3}")]);
    }
    println!("{table}");
}
