//! Calibration: the card-level figures of the twin ([`CardScale`]) fitted to measurements, so
//! that a card or engine build the profiles are off for is corrected by the runs themselves.
//!
//! The fit minimises the mean squared log error of every measured figure (each term capped,
//! so one row the twin cannot follow does not dominate), plus a small pull towards the
//! nominal profile that keeps a figure the measurements do not constrain where it was.

mod simplex;

pub use simplex::Stopped;

use super::profiles::CardScale;
use simplex::Simplex;
use std::collections::BTreeMap;

/// One measurement the twin is fitted to: how the twin predicts it on a scaled card, and what
/// was measured.
pub trait Observation: Sync {
    /// The twin's figures on the card scaled by `scale`, by name; an error when the twin
    /// cannot simulate it there (then every measured figure counts as missed by the cap).
    fn predict(&self, scale: CardScale) -> Result<BTreeMap<String, f64>, String>;
    /// The measured figures, by the same names; only these are compared.
    fn measured(&self) -> BTreeMap<String, f64>;
}

/// The outcome of a calibration.
#[derive(Clone, Debug)]
pub struct Calibration {
    /// The fitted figures.
    pub scale: CardScale,
    /// Median absolute error of the figures, percent, at the starting scale.
    pub error_before_pct: f64,
    /// The same at the fitted scale.
    pub error_after_pct: f64,
    /// Twin evaluations of the whole set spent by the fit.
    pub evaluations: usize,
    /// Why the fit ended.
    pub stopped: Stopped,
}

/// A log error above this (a factor of 4) counts as this: the twin is simply wrong there.
const CAP: f64 = 1.386_294_361_119_890_6;
/// Weight of the pull towards the starting scale, per squared log unit.
const PULL: f64 = 1e-3;
/// Each figure stays within a factor of 8 of the nominal profile.
const BOUND: f64 = 2.079_441_541_679_836;

/// Fit the card scale to `observations`, starting from `start`, with at most `budget`
/// evaluations of the set. An error when no observation has a measured figure.
pub fn calibrate(
    observations: &[&dyn Observation],
    start: CardScale,
    budget: usize,
) -> Result<Calibration, String> {
    let measured: Vec<BTreeMap<String, f64>> =
        observations.iter().map(|o| usable(o.measured())).collect();
    if measured.iter().all(BTreeMap::is_empty) {
        return Err("no measured figure to calibrate against".into());
    }
    let origin = start.to_array().map(f64::ln);
    let errors_at = |log_scale: &[f64; 3]| {
        let scale = CardScale::from_array(log_scale.map(f64::exp));
        log_errors(observations, &measured, scale)
    };
    let before = errors_at(&origin);
    let solver = Simplex {
        bound: BOUND,
        step: 0.3,
        tolerance: 2e-3,
        budget,
    };
    let found = solver.minimise(origin, |x| {
        let errors = errors_at(x);
        let misfit = errors.iter().map(|e| e * e).sum::<f64>() / errors.len() as f64;
        let pull = x
            .iter()
            .zip(&origin)
            .map(|(a, b)| (a - b).powi(2))
            .sum::<f64>();
        misfit + PULL * pull
    });
    Ok(Calibration {
        scale: CardScale::from_array(found.x.map(f64::exp)),
        error_before_pct: median_pct(&before),
        error_after_pct: median_pct(&errors_at(&found.x)),
        evaluations: found.evaluations,
        stopped: found.stopped,
    })
}

/// The measured figures a log error can be taken of.
fn usable(figures: BTreeMap<String, f64>) -> BTreeMap<String, f64> {
    figures
        .into_iter()
        .filter(|(_, v)| v.is_finite() && *v > 0.0)
        .collect()
}

/// `ln(predicted / measured)` of every measured figure, capped at ±[`CAP`]; the observations
/// are simulated on all cores.
fn log_errors(
    observations: &[&dyn Observation],
    measured: &[BTreeMap<String, f64>],
    scale: CardScale,
) -> Vec<f64> {
    let pairs: Vec<(&dyn Observation, &BTreeMap<String, f64>)> =
        observations.iter().copied().zip(measured).collect();
    let per_observation =
        crate::util::parallel::map(&pairs, |(o, m)| observation_errors(*o, m, scale));
    per_observation.into_iter().flatten().collect()
}

fn observation_errors(
    observation: &dyn Observation,
    measured: &BTreeMap<String, f64>,
    scale: CardScale,
) -> Vec<f64> {
    let predicted = observation.predict(scale).unwrap_or_default();
    measured
        .iter()
        .map(|(name, value)| match predicted.get(name) {
            Some(p) if p.is_finite() && *p > 0.0 => (p / value).ln().clamp(-CAP, CAP),
            _ => CAP,
        })
        .collect()
}

/// Median absolute error in percent of a set of log errors.
fn median_pct(log_errors: &[f64]) -> f64 {
    let pct: Vec<f64> = log_errors
        .iter()
        .map(|e| (e.exp() - 1.0).abs() * 100.0)
        .collect();
    crate::util::stats::median(&pct)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A made-up twin: latency falls with compute, decode time with bandwidth plus host time.
    struct Toy {
        load: f64,
        truth: CardScale,
    }

    impl Toy {
        fn figures(&self, s: CardScale) -> BTreeMap<String, f64> {
            BTreeMap::from([
                ("ttft".to_string(), self.load / s.compute + 2.0 / s.host),
                ("tpot".to_string(), 1.0 / s.bandwidth + self.load / s.host),
            ])
        }
    }

    impl Observation for Toy {
        fn predict(&self, scale: CardScale) -> Result<BTreeMap<String, f64>, String> {
            Ok(self.figures(scale))
        }
        fn measured(&self) -> BTreeMap<String, f64> {
            self.figures(self.truth)
        }
    }

    #[test]
    fn recovers_the_scale_the_measurements_were_taken_at() {
        let truth = CardScale {
            compute: 0.6,
            bandwidth: 1.5,
            host: 0.8,
        };
        let rows: Vec<Toy> = [1.0, 4.0, 16.0]
            .into_iter()
            .map(|load| Toy { load, truth })
            .collect();
        let observations: Vec<&dyn Observation> =
            rows.iter().map(|r| r as &dyn Observation).collect();
        let fit = calibrate(&observations, CardScale::default(), 400).unwrap();
        assert!(fit.error_before_pct > 20.0, "{fit:?}");
        assert!(fit.error_after_pct < 1.0, "{fit:?}");
        for (got, want) in fit.scale.to_array().iter().zip(truth.to_array()) {
            assert!((got / want - 1.0).abs() < 0.03, "{fit:?}");
        }
    }

    #[test]
    fn nothing_measured_is_an_error() {
        struct Empty;
        impl Observation for Empty {
            fn predict(&self, _: CardScale) -> Result<BTreeMap<String, f64>, String> {
                Ok(BTreeMap::new())
            }
            fn measured(&self) -> BTreeMap<String, f64> {
                BTreeMap::from([("ttft".to_string(), f64::NAN)])
            }
        }
        let e = calibrate(&[&Empty], CardScale::default(), 50).unwrap_err();
        assert!(e.contains("no measured figure"), "{e}");
    }
}
