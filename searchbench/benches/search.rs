//! Search-efficiency benchmark: every sampler against random search on simulator scenarios
//! (space files evaluated by `sim eval` in virtual time), or on a grid measured on a real
//! engine (`--grid`). Run with `scripts/bench-search.sh [--seeds N] [--trials N] [--out DIR] ...`.

use clap::Parser;
use infertune_searchbench::{
    self as searchbench, optuna, plot, report, sim, table, warm, BenchConfig,
};
use std::path::PathBuf;
use std::time::Instant;

/// Options (cargo bench passes `--bench`, accepted and ignored).
#[derive(Parser, Debug)]
struct Args {
    /// Folder of scenario space files.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios"))]
    scenarios: PathBuf,
    /// Seeds per sampler and scenario.
    #[arg(long, default_value_t = 20)]
    seeds: u64,
    /// Trials per search.
    #[arg(long, default_value_t = 80)]
    trials: usize,
    /// Samplers to compare (comma-separated); `random` is the baseline.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "random,qmc,grid,pso,tpe,bo"
    )]
    samplers: Vec<String>,
    /// Uniform draws of the reference search per scenario.
    #[arg(long, default_value_t = 20_000)]
    reference_draws: usize,
    /// Search for the reference optimum again instead of reading the cache in the output folder.
    #[arg(long)]
    fresh_reference: bool,
    /// Worker threads (default: available cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Output folder for regret.csv, regret.svg and summary.md.
    #[arg(long, default_value = "target/bench-search")]
    out: PathBuf,
    /// Warm-start comparisons `TARGET=PRIOR` (scenario names; a prior may also come from
    /// the `priors` folder of the scenarios): `bo` cold against `bo` seeded with a prior search.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "qwen2.5-7b-h100-chat=qwen2.5-7b-h200-chat,qwen2.5-7b-h100-chat=qwen2.5-72b-tp4-long-input"
    )]
    warm_start: Vec<String>,
    /// Trials of each prior search of a warm-start comparison.
    #[arg(long, default_value_t = 40)]
    prior_trials: usize,
    /// Transfer weight of prior trials.
    #[arg(long, default_value_t = infertune::sampler::DEFAULT_TRANSFER_WEIGHT)]
    transfer_weight: f64,
    /// A Python with Optuna (`scripts/provision-optuna.sh` prints one): also run Optuna's
    /// samplers, driven by `scripts/bench-optuna.py`.
    #[arg(long)]
    optuna: Option<PathBuf>,
    /// Optuna samplers to run with `--optuna` (`tpe` is multivariate TPE, `cmaes` CMA-ES).
    #[arg(long, value_delimiter = ',', default_value = "tpe,cmaes")]
    optuna_samplers: Vec<String>,
    /// Instead of the simulator's scenarios, one measured on a real engine:
    /// `SPACE=STUDY[,STUDY...]`, the grid's space file and the study folders that measured
    /// every config of it (`scripts/bench-real-grid.sh`); warm-start comparisons are skipped.
    #[arg(long)]
    grid: Option<String>,
    /// Measure each scenario on the twin perturbed away from its card (figures off by 30-50%
    /// both ways, 2× off, the V0 scheduler) instead of as written; with `bo:twin` among the
    /// samplers, the twin prior is computed on the nominal twin.
    #[arg(long, conflicts_with = "grid")]
    twin: bool,
    #[arg(long, hide = true)]
    bench: bool,
}

fn main() -> anyhow::Result<()> {
    // cargo runs a bench in its package's folder; paths given to it (and the default output
    // folder) are relative to the repository root, where the scripts run it from.
    std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))?;
    let args = Args::parse();
    let started = Instant::now();
    let scenarios = match &args.grid {
        Some(grid) => vec![grid_scenario(grid)?],
        None => sim::scenarios(&args.scenarios, args.twin)?,
    };
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let config = BenchConfig {
        samplers: args.samplers.clone(),
        seeds: args.seeds,
        trials: args.trials,
        reference_draws: args.reference_draws,
        reference_cache: (!args.fresh_reference).then(|| args.out.join("reference.json")),
        threads,
        optuna: args.optuna.clone().map(|python| optuna::OptunaConfig {
            python,
            driver: concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/bench-optuna.py").into(),
            samplers: args.optuna_samplers.clone(),
        }),
        skip_without_optimum: args.twin,
    };
    let results = searchbench::run(&scenarios, &config)?;
    let mut order = args.samplers.clone();
    order.extend(config.optuna.iter().flat_map(|o| o.labels()));
    std::fs::create_dir_all(&args.out)?;
    report::write_csv(&results, &args.out.join("regret.csv"))?;
    std::fs::write(args.out.join("regret.svg"), plot::svg(&results, &order))?;
    let mut summary = report::scenarios_table(&results);
    summary.push('\n');
    let rows = report::summarise(&results, &order);
    summary.push_str(&report::table(&rows, args.trials));
    if let Some(line) = report::versus(&rows, "bo", &optuna::label("tpe"), "Optuna TPE") {
        summary.push_str(&format!("\n{line}\n"));
    }
    if args.grid.is_none() {
        summary.push_str(&warm_starts(&args, &scenarios, &results, threads)?);
    }
    std::fs::write(args.out.join("summary.md"), &summary)?;
    println!("{summary}");
    println!(
        "{} scenarios × {} seeds × {} samplers × {} trials in {:.1}s; outputs in {}",
        results.len(),
        args.seeds,
        order.len(),
        args.trials,
        started.elapsed().as_secs_f64(),
        args.out.display()
    );
    Ok(())
}

/// The measured-grid scenario `SPACE=STUDY[,STUDY...]`.
fn grid_scenario(grid: &str) -> anyhow::Result<searchbench::Scenario> {
    let (space, studies) = grid
        .split_once('=')
        .ok_or_else(|| anyhow::anyhow!("--grid `{grid}`: write SPACE=STUDY[,STUDY...]"))?;
    let studies: Vec<PathBuf> = studies.split(',').map(PathBuf::from).collect();
    table::scenario(space.as_ref(), &studies)
}

/// The warm-start comparisons of `args`, as a summary table (empty when there are none).
fn warm_starts(
    args: &Args,
    scenarios: &[searchbench::Scenario],
    results: &[searchbench::ScenarioResult],
    threads: usize,
) -> anyhow::Result<String> {
    let pairs: Vec<(&str, &str)> = args
        .warm_start
        .iter()
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            p.split_once('=').ok_or_else(|| {
                anyhow::anyhow!("--warm-start `{p}`: write TARGET=PRIOR (two scenario names)")
            })
        })
        .collect::<anyhow::Result<_>>()?;
    let priors_dir = args.scenarios.join("priors");
    let priors = if priors_dir.is_dir() {
        sim::scenarios(&priors_dir, false)?
    } else {
        Vec::new()
    };
    let config = warm::WarmConfig {
        seeds: args.seeds,
        trials: args.trials,
        prior_trials: args.prior_trials,
        weight: args.transfer_weight,
        threads,
    };
    let mut compared = Vec::new();
    for (target, prior) in pairs {
        let find = |name: &str| scenarios.iter().chain(&priors).find(|s| s.name == name);
        let known = || {
            let names: Vec<&str> = scenarios
                .iter()
                .chain(&priors)
                .map(|s| s.name.as_str())
                .collect();
            names.join(", ")
        };
        let (Some(t), Some(p)) = (find(target), find(prior)) else {
            anyhow::bail!(
                "--warm-start {target}={prior}: unknown scenario; known: {}",
                known()
            );
        };
        let Some(base) = results.iter().find(|r| r.name == target) else {
            anyhow::bail!("--warm-start {target}={prior}: the target must be a benchmark scenario");
        };
        compared.push(warm::compare(t, base, p, &config)?);
    }
    if compared.is_empty() {
        return Ok(String::new());
    }
    let rows = report::summarise(&compared, &warm::labels());
    let rows: Vec<_> = rows.into_iter().filter(|r| r.scenario != "all").collect();
    Ok(format!(
        "\nWarm start (`bo` seeded with {} trials of a `bo` search on the prior, transfer weight {}):\n\n{}",
        args.prior_trials,
        args.transfer_weight,
        report::table(&rows, args.trials)
    ))
}
