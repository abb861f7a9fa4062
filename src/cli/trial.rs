//! `infertune trial run`: one trial of a study, run where it is started (inside a Slurm job the
//! tuner submitted); the tuner journals the record it writes into the study folder.

use crate::exec::interrupt;
use crate::exec::{Backends, EarlyStops, HttpProber, Silent};
use crate::launch::ProcessLauncher;
use crate::space::StudySpec;
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// Subcommands of `infertune trial`.
#[derive(Subcommand, Debug)]
pub(crate) enum TrialCommand {
    /// Run one trial that the tuner marked in flight in the study folder, on the devices the
    /// Slurm job holds, and write its record there (used by the Slurm executor).
    Run(TrialRunArgs),
}

/// Arguments of `infertune trial run`.
#[derive(Args, Debug)]
pub(crate) struct TrialRunArgs {
    /// The study's search space file.
    #[arg(long)]
    pub space: PathBuf,
    /// The study folder (on a filesystem the tuner shares).
    #[arg(long)]
    pub dir: PathBuf,
    /// The trial's number.
    #[arg(long)]
    pub number: u32,
    /// The slot the tuner gave the trial.
    #[arg(long, default_value_t = 0)]
    pub slot: u32,
    /// Run the probe to its end even when an SLO is certainly broken (the study's `--no-prune`).
    #[arg(long)]
    pub no_prune: bool,
    /// Run the probe to its end whatever the server signals (the study's `--no-server-stop`).
    #[arg(long)]
    pub no_server_stop: bool,
}

impl TrialRunArgs {
    /// What may stop the trial's probe early.
    fn early(&self) -> EarlyStops {
        EarlyStops {
            slo: !self.no_prune,
            server: !self.no_server_stop,
        }
    }
}

/// Runs `infertune trial …`.
pub(crate) fn run(command: TrialCommand) -> anyhow::Result<i32> {
    let TrialCommand::Run(args) = command;
    let (space, _notes) = StudySpec::load_for_host(&args.space, crate::engine::rule_pack)?;
    let stop = interrupt::on_stop_signal()?;
    let engine = crate::engine::for_kind(space.engine.kind);
    let prober = HttpProber::new()?;
    let launcher = ProcessLauncher::new(crate::engine::log_patterns());
    let backends: Backends = Backends {
        check: &space,
        engine,
        launcher: &launcher,
        prober: &prober,
        observer: &Silent,
    };
    let early = args.early();
    let trial = (args.number, args.slot);
    let recorded = crate::exec::run_in_job(&space, backends, &args.dir, trial, stop, early)?;
    Ok(if recorded { 0 } else { 3 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Line {
        #[command(subcommand)]
        trial: TrialCommand,
    }

    #[test]
    fn a_job_reads_the_studys_early_stops_from_its_flags() {
        let parse = |extra: &[&str]| {
            let base = [
                "infertune",
                "run",
                "--space",
                "s.yaml",
                "--dir",
                "d",
                "--number",
                "3",
            ];
            let line = Line::try_parse_from(base.iter().chain(extra)).unwrap();
            let TrialCommand::Run(args) = line.trial;
            args.early()
        };
        let on = EarlyStops {
            slo: true,
            server: true,
        };
        assert_eq!(parse(&[]), on);
        let off = EarlyStops { slo: false, ..on };
        assert_eq!(parse(&off.flags()), off, "the flags a Slurm job is given");
    }
}
