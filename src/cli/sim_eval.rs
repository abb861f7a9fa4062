//! `infertune sim eval`: one config (a table or JSON), or a JSON-lines file of configs.

use super::sim_target::TargetArgs;
use crate::probe::{DatasetSpec, WorkloadSpec};
use crate::record::{MetricMap, Params};
use crate::sim::{eval, evaluate, Evaluation};
use anyhow::Context;
use serde_json::json;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::Instant;

/// `infertune sim eval`.
#[derive(clap::Args, Debug)]
pub(crate) struct EvalArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// Workload file (a probe WorkloadSpec in YAML); overrides the inline workload flags.
    #[arg(long)]
    workload: Option<PathBuf>,
    /// Inline workload: prompt tokens.
    #[arg(long, default_value_t = 1024)]
    input_len: u32,
    /// Inline workload: output tokens.
    #[arg(long, default_value_t = 128)]
    output_len: u32,
    /// Inline workload: lengths vary uniformly by ± this fraction.
    #[arg(long, default_value_t = 0.0)]
    range_ratio: f64,
    /// Inline workload: tokens of a prefix shared by every prompt.
    #[arg(long, default_value_t = 0)]
    prefix_len: u32,
    /// Inline workload: concurrent clients (closed loop).
    #[arg(long, default_value_t = 16)]
    concurrency: u32,
    /// Inline workload: measured requests.
    #[arg(long, default_value_t = 200)]
    requests: u32,
    /// Evaluate each line of this JSON-lines file (one params object a line) on top of `--set`.
    #[arg(long)]
    configs: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

impl EvalArgs {
    /// The workload: the file when given, else the inline flags.
    fn workload(&self) -> anyhow::Result<WorkloadSpec> {
        if let Some(path) = &self.workload {
            return crate::space::load_workload(path);
        }
        let mut workload = WorkloadSpec::closed_random(
            self.input_len,
            self.output_len,
            self.concurrency,
            self.requests,
        );
        if let DatasetSpec::Random {
            range_ratio,
            prefix_len,
            ..
        } = &mut workload.dataset
        {
            *range_ratio = self.range_ratio;
            *prefix_len = self.prefix_len;
        }
        Ok(workload)
    }
}

/// Run `sim eval`; exit code 1 when the single config fails at start.
pub fn run(args: &EvalArgs) -> anyhow::Result<i32> {
    let workload = args.workload()?;
    let base: Params = args.target.set.iter().cloned().collect();
    let Some(path) = &args.configs else {
        let deployment = args.target.deployment(&base);
        return Ok(
            match evaluate(&deployment, &base, &workload, args.target.seed) {
                Ok(evaluation) if args.json => {
                    println!("{}", evaluation_json(&evaluation));
                    0
                }
                Ok(evaluation) => {
                    print_table(&evaluation.metrics);
                    for (i, stage) in evaluation.stages.iter().enumerate() {
                        println!("\nstage {i}");
                        print_table(stage);
                    }
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

/// The run's metrics, each stage's (as `bench` reports them) and the prefix cache counters.
fn evaluation_json(e: &Evaluation) -> serde_json::Value {
    let stages: Vec<_> = (e.stages.iter().enumerate())
        .map(|(i, metrics)| {
            let mut stage = json!(metrics);
            stage["stage"] = json!(i);
            stage
        })
        .collect();
    json!({
        "metrics": e.metrics,
        "stages": stages,
        "prefix_cache": {"queries": e.prefix_cache_queries, "hits": e.prefix_cache_hits},
    })
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
