//! Search-efficiency benchmark: every sampler against random search on simulator scenarios
//! (space files evaluated by `sim eval` in virtual time). Run with
//! `scripts/bench-search.sh [--seeds N] [--trials N] [--out DIR] ...`.

use clap::Parser;
use infertune::searchbench::{self, plot, report, sim, BenchConfig};
use std::path::PathBuf;
use std::time::Instant;

/// Options (cargo bench passes `--bench`, accepted and ignored).
#[derive(Parser, Debug)]
struct Args {
    /// Folder of scenario space files.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/src/searchbench/scenarios"))]
    scenarios: PathBuf,
    /// Seeds per sampler and scenario.
    #[arg(long, default_value_t = 20)]
    seeds: u64,
    /// Trials per search.
    #[arg(long, default_value_t = 80)]
    trials: usize,
    /// Samplers to compare (comma-separated); `random` is the baseline.
    #[arg(long, value_delimiter = ',', default_value = "random,qmc,grid,pso,tpe")]
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
    #[arg(long, hide = true)]
    bench: bool,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let started = Instant::now();
    let scenarios = sim::scenarios(&args.scenarios)?;
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
    };
    let results = searchbench::run(&scenarios, &config)?;
    std::fs::create_dir_all(&args.out)?;
    report::write_csv(&results, &args.out.join("regret.csv"))?;
    std::fs::write(
        args.out.join("regret.svg"),
        plot::svg(&results, &args.samplers),
    )?;
    let mut summary = report::scenarios_table(&results);
    summary.push('\n');
    summary.push_str(&report::table(
        &report::summarise(&results, &args.samplers),
        args.trials,
    ));
    std::fs::write(args.out.join("summary.md"), &summary)?;
    println!("{summary}");
    println!(
        "{} scenarios × {} seeds × {} samplers × {} trials in {:.1}s; outputs in {}",
        results.len(),
        args.seeds,
        args.samplers.len(),
        args.trials,
        started.elapsed().as_secs_f64(),
        args.out.display()
    );
    Ok(())
}
