//! Command-line front end: parses arguments and hands each subcommand to its module.

use clap::{Parser, Subcommand};

/// Finds the best launch configuration for an LLM inference server.
#[derive(Parser, Debug)]
#[command(name = "infertune", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Tune an engine over a search space (the main job).
    Tune(crate::study::cli::TuneArgs),
    /// Validate a search space and show example launches (nothing is spawned).
    Check(crate::space::cli::CheckArgs),
    /// Load-test a running OpenAI-compatible server.
    Bench(crate::probe::cli::BenchArgs),
    /// Start one config, wait until it serves, keep it up until Ctrl-C.
    Launch(crate::launch::cli::LaunchArgs),
    /// The built-in engine simulator.
    #[command(subcommand)]
    Sim(crate::sim::cli::SimCommand),
    /// Show NUMA nodes, accelerators and binding candidates.
    Topo(crate::topo::cli::TopoArgs),
    /// Write best.sh / best.json for a study folder.
    Export(crate::study::cli::ExportArgs),
    /// Write report.md / report.html for a study folder.
    Report(crate::report::cli::ReportArgs),
}

/// Parses `std::env::args` and runs the subcommand; returns the process exit code.
pub fn main() -> i32 {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Tune(a) => crate::study::cli::tune(a),
        Command::Check(a) => crate::space::cli::run(a),
        Command::Bench(a) => crate::probe::cli::run(a),
        Command::Launch(a) => crate::launch::cli::run(a),
        Command::Sim(c) => crate::sim::cli::run(c),
        Command::Topo(a) => crate::topo::cli::run(a),
        Command::Export(a) => crate::study::cli::export(a),
        Command::Report(a) => crate::report::cli::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            2
        }
    }
}
