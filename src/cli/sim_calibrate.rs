//! `infertune sim calibrate`: a card profile fitted to measurements.

use super::sim_truth::TruthArgs;
use crate::sim::calibrate::{calibrate, Calibration, Observation, Stopped};
use crate::sim::validate::TruthObservation;
use crate::sim::CardScale;
use crate::util::atomic::{write_atomic, Access};
use std::path::PathBuf;
use std::time::Duration;

/// `infertune sim calibrate`.
#[derive(clap::Args, Debug)]
pub(crate) struct CalibrateArgs {
    #[command(flatten)]
    truth: TruthArgs,
    /// Leave out the rows of this experiment (to predict it with the fitted card afterwards).
    #[arg(long)]
    hold_out: Option<String>,
    /// Where to write the fitted card profile (YAML; pass it as `--card FILE`).
    #[arg(long)]
    out: PathBuf,
    /// Simulate at most this long of each stage while fitting (its steady state).
    #[arg(long, default_value = "120s", value_parser = humantime::parse_duration)]
    longest: Duration,
    /// Most evaluations of the whole truth file.
    #[arg(long, default_value_t = 150)]
    budget: usize,
}

/// Run `sim calibrate`: fit the card's compute, bandwidth and host speed to every row measured
/// not overloaded, and write the nominal profile with those figures scaled.
pub fn run(args: &CalibrateArgs) -> anyhow::Result<i32> {
    let nominal = crate::sim::profiles::card(&args.truth.card).map_err(anyhow::Error::msg)?;
    let mut rows = args.truth.rows()?;
    if let Some(held) = &args.hold_out {
        let before = rows.len();
        rows.retain(|r| &r.experiment != held);
        if rows.len() == before {
            anyhow::bail!("--hold-out {held}: no row of the truth file has that experiment");
        }
    }
    let target = args.truth.target(Some(args.longest));
    let observations: Vec<TruthObservation> = rows
        .iter()
        .map(|row| TruthObservation {
            row,
            target: &target,
        })
        .collect();
    let used = observations
        .iter()
        .filter(|o| !o.measured().is_empty())
        .count();
    let dyn_observations: Vec<&dyn Observation> =
        observations.iter().map(|o| o as &dyn Observation).collect();
    eprintln!(
        "calibrating {} on {used} of {} rows (those measured not overloaded), figures {}",
        args.truth.card,
        rows.len(),
        rows.first()
            .map_or(String::new(), |r| r.format.fitted().join(", "))
    );
    let fit = calibrate(&dyn_observations, CardScale::default(), args.budget)
        .map_err(|e| anyhow::anyhow!("{e}: every row is overloaded or lacks the figures"))?;
    let mut profile = fit.scale.apply(nominal);
    profile.name = format!("{}-calibrated", nominal.name);
    profile.aliases.clear();
    let text = format!(
        "{}{}",
        header(args, &fit, used),
        serde_saphyr::to_string(&profile)?
    );
    write_atomic(&args.out, &text, Access::Shared)?;
    println!("{}", summary(&fit));
    println!(
        "wrote the card profile `{}` to {}; simulate on it with `--card {}` (sim validate, \
         sim eval, sim serve, or a space's `card:`)",
        profile.name,
        args.out.display(),
        args.out.display()
    );
    Ok(0)
}

fn header(args: &CalibrateArgs, fit: &Calibration, rows: usize) -> String {
    let held = args
        .hold_out
        .as_ref()
        .map_or(String::new(), |e| format!(", experiment {e} held out"));
    format!(
        "# Card profile fitted by `infertune sim calibrate` to {} ({rows} rows{held})\n\
         # from the profile `{}`: {}\n",
        args.truth.file().display(),
        args.truth.card,
        summary(fit)
    )
}

fn summary(fit: &Calibration) -> String {
    let s = fit.scale;
    format!(
        "compute ×{:.3}, bandwidth ×{:.3}, host ×{:.3}; median error {:.1}% before, {:.1}% after \
         ({} evaluations, {})",
        s.compute,
        s.bandwidth,
        s.host,
        fit.error_before_pct,
        fit.error_after_pct,
        fit.evaluations,
        match fit.stopped {
            Stopped::Converged => "converged",
            Stopped::Budget => "evaluation budget spent",
        }
    )
}
