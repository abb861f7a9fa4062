//! How far a card is from its nominal profile: the few card-level figures calibration fits.

use super::CardProfile;
use serde::{Deserialize, Serialize};

/// Speed multipliers on a card's nominal figures; 1 everywhere is the profile as shipped and
/// above 1 is faster. A card that is 0.6× its profile in every respect is `uniform(0.6)`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CardScale {
    /// Multiplier on the dense tensor throughput (`tflops`): prefill-bound steps.
    pub compute: f64,
    /// Multiplier on the memory bandwidth (`hbm_gbps`): decode-bound steps.
    pub bandwidth: f64,
    /// Multiplier on the host's speed (divides `host_factor`): per-step scheduling work.
    pub host: f64,
}

impl Default for CardScale {
    fn default() -> Self {
        CardScale::uniform(1.0)
    }
}

impl CardScale {
    /// Every figure scaled by `factor`.
    pub fn uniform(factor: f64) -> CardScale {
        CardScale {
            compute: factor,
            bandwidth: factor,
            host: factor,
        }
    }

    /// The profile as shipped.
    pub fn is_nominal(&self) -> bool {
        *self == CardScale::default()
    }

    /// The figures as `[compute, bandwidth, host]`.
    pub fn to_array(self) -> [f64; 3] {
        [self.compute, self.bandwidth, self.host]
    }

    /// The scale of `[compute, bandwidth, host]`.
    pub fn from_array([compute, bandwidth, host]: [f64; 3]) -> CardScale {
        CardScale {
            compute,
            bandwidth,
            host,
        }
    }

    /// `card` with its figures scaled.
    pub fn apply(&self, card: &CardProfile) -> CardProfile {
        let mut scaled = card.clone();
        scaled.tflops *= self.compute;
        scaled.hbm_gbps *= self.bandwidth;
        scaled.host_factor /= self.host;
        scaled
    }

    /// The scale that turns `nominal` into `card` (both with the same shape otherwise).
    pub fn between(nominal: &CardProfile, card: &CardProfile) -> CardScale {
        CardScale {
            compute: card.tflops / nominal.tflops,
            bandwidth: card.hbm_gbps / nominal.hbm_gbps,
            host: nominal.host_factor / card.host_factor,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::profiles::card;

    #[test]
    fn applying_a_scale_and_reading_it_back_agree() {
        let h100 = card("H100").unwrap();
        let scale = CardScale {
            compute: 0.6,
            bandwidth: 1.5,
            host: 2.0,
        };
        let scaled = scale.apply(h100);
        assert!((scaled.tflops - 0.6 * h100.tflops).abs() < 1e-9);
        assert!((scaled.host_factor - h100.host_factor / 2.0).abs() < 1e-12);
        let back = CardScale::between(h100, &scaled);
        for (a, b) in back.to_array().iter().zip(scale.to_array()) {
            assert!((a - b).abs() < 1e-12, "{back:?}");
        }
        assert!(CardScale::default().is_nominal() && !scale.is_nominal());
    }
}
