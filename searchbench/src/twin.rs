//! Twin-prior scenarios: the engine the search measures is the twin with its card figures
//! off, or another scheduler generation, while `bo:twin` starts from the nominal twin's view
//! of the space (`search.prior: twin`). They stand for a real card the profiles are wrong for.

use infertune::sim::{CardScale, Deployment};

/// How the measured engine differs from the twin the prior is computed on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Perturbation {
    /// Short name, appended to the scenario's.
    pub name: &'static str,
    /// Speed multipliers of the measured card against its profile.
    pub scale: CardScale,
    /// Engine version measured instead of the space's (another scheduler generation).
    pub version: Option<&'static str>,
}

const fn scaled(compute: f64, bandwidth: f64, host: f64) -> CardScale {
    CardScale {
        compute,
        bandwidth,
        host,
    }
}

/// The perturbations `--twin` runs: card figures off by 30–50% in both directions, the V0
/// scheduler (vLLM before 0.8) under a space written for today's, and a card 2× off.
pub const PERTURBATIONS: [Perturbation; 5] = [
    Perturbation {
        name: "compute ×0.6, bandwidth ×1.4, host ×0.7",
        scale: scaled(0.6, 1.4, 0.7),
        version: None,
    },
    Perturbation {
        name: "compute ×1.5, bandwidth ×0.7, host ×1.3",
        scale: scaled(1.5, 0.7, 1.3),
        version: None,
    },
    Perturbation {
        name: "V0 scheduler",
        scale: scaled(1.0, 1.0, 1.0),
        version: Some("0.6.3"),
    },
    Perturbation {
        name: "every figure ×2",
        scale: scaled(2.0, 2.0, 2.0),
        version: None,
    },
    Perturbation {
        name: "compute ×2, bandwidth ×0.5",
        scale: scaled(2.0, 0.5, 1.0),
        version: None,
    },
];

impl Perturbation {
    /// `deployment` as this perturbation measures it.
    pub fn apply(&self, deployment: &Deployment) -> Deployment {
        Deployment {
            card_scale: self.scale,
            version: self
                .version
                .map(str::to_string)
                .or_else(|| deployment.version.clone()),
            ..deployment.clone()
        }
    }
}
