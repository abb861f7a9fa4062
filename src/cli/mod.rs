//! Command-line front end: parses arguments and hands each subcommand to its module. Everything
//! that reaches the terminal (results, tables, progress bars, notes and warnings) is written
//! here; the modules below report through return values, observers and callbacks.

mod bench;
mod bench_progress;
mod bench_session;
mod bench_sweep;
mod check;
mod check_json;
mod check_twin;
mod compare;
mod engine;
mod export;
mod launch;
mod plan;
mod report;
mod sim;
mod sim_calibrate;
mod sim_eval;
mod sim_serve;
mod sim_target;
mod sim_truth;
mod sim_validate;
pub mod startup;
mod topo;
mod trial;
mod tune;
mod tune_events;
mod tune_progress;

use clap::{Parser, Subcommand};

/// Finds the best launch configuration for an LLM inference server.
#[derive(Parser, Debug)]
#[command(name = "infertune", version, about)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Tune an engine over a search space (the main job).
    Tune(tune::TuneArgs),
    /// Validate a search space and show example launches (nothing is spawned).
    Check(check::CheckArgs),
    /// Load-test a running OpenAI-compatible server.
    Bench(bench::BenchArgs),
    /// Start one config, wait until it serves, keep it up until Ctrl-C.
    Launch(launch::LaunchArgs),
    /// The built-in engine simulator.
    #[command(subcommand)]
    Sim(sim::SimCommand),
    /// Show NUMA nodes, accelerators and binding candidates.
    Topo(topo::TopoArgs),
    /// Engine facts: the flag catalogue of an installed engine.
    #[command(subcommand)]
    Engine(engine::EngineCommand),
    /// Write best.sh / best.json and deployment files (vLLM/SGLang config, docker, Kubernetes).
    Export(export::ExportArgs),
    /// Tensor-parallel size, replicas and each server's knobs for a target load on some GPUs,
    /// chosen on the twin.
    Plan(plan::PlanArgs),
    /// Write report.md / report.html for a study folder.
    Report(report::ReportArgs),
    /// Several studies side by side: winners, gains, costs (a table and an HTML page).
    Compare(compare::CompareArgs),
    /// One trial of a study (what each Slurm job of the Slurm executor runs).
    #[command(subcommand, hide = true)]
    Trial(trial::TrialCommand),
}

/// Parses `std::env::args` and runs the subcommand; returns the process exit code.
pub fn main() -> i32 {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Tune(a) => tune::run(a),
        Command::Check(a) => check::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Launch(a) => launch::run(a),
        Command::Sim(c) => sim::run(c),
        Command::Topo(a) => topo::run(a),
        Command::Engine(c) => engine::run(c),
        Command::Export(a) => export::run(a),
        Command::Plan(a) => plan::run(a),
        Command::Report(a) => report::run(a),
        Command::Compare(a) => compare::run(a),
        Command::Trial(c) => trial::run(c),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            2
        }
    }
}
