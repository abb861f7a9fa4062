//! `precision:` — a probe that runs until its figure is known: it ends once the 95% interval
//! of the steady-state output throughput (see [`super::steady`]) is within `half_width` of it,
//! after at least `min` of steady-state window and at most `max` of measured phase.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// When a measured phase may end: its interval's target, a floor and a ceiling of time.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Precision {
    /// The run ends once the 95% interval's half-width is at most this fraction of the figure
    /// (0.05: within ±5%).
    #[serde(default = "default_half_width")]
    pub half_width: f64,
    /// Least steady-state window before the run may end, however narrow its interval.
    #[serde(default = "default_min", with = "humantime_serde")]
    pub min: Duration,
    /// Most time the measured phase runs; a figure that never settles ends here, its interval
    /// recorded as it stands.
    #[serde(default = "default_max", with = "humantime_serde")]
    pub max: Duration,
}

impl Default for Precision {
    fn default() -> Self {
        Precision {
            half_width: default_half_width(),
            min: default_min(),
            max: default_max(),
        }
    }
}

/// ±5%: the relative spread a verdict of ten points needs from one run.
fn default_half_width() -> f64 {
    0.05
}

/// Thirty seconds: ten batches of three seconds, a few decode rounds of a small chat.
fn default_min() -> Duration {
    Duration::from_secs(30)
}

/// Five minutes: a trial's probe should not outlast its server's start-up many times over.
fn default_max() -> Duration {
    Duration::from_secs(300)
}

impl Precision {
    /// Checks the numbers; the error names the field and what it must be.
    pub(crate) fn validate(&self) -> Result<(), String> {
        if !(self.half_width.is_finite() && self.half_width > 0.0 && self.half_width < 1.0) {
            return Err(format!(
                "precision.half_width is a fraction between 0 and 1 (0.05 for ±5%), got {}",
                self.half_width
            ));
        }
        if self.max.is_zero() || self.min > self.max {
            return Err(format!(
                "precision: `min` ({}) must not exceed `max` ({}), and `max` must be more than zero",
                humantime::format_duration(self.min),
                humantime::format_duration(self.max)
            ));
        }
        Ok(())
    }

    /// True once a window of `window` measured to a relative half-width of `relative` may end
    /// the run.
    pub fn reached(&self, window: Duration, relative: Option<f64>) -> bool {
        window >= self.min && relative.is_some_and(|r| r <= self.half_width)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_fill_what_the_space_leaves_out_and_bad_numbers_are_named() {
        let p: Precision = serde_saphyr::from_str("half_width: 0.03").unwrap();
        assert_eq!(p.half_width, 0.03);
        assert_eq!((p.min, p.max), (default_min(), default_max()));
        assert!(p.validate().is_ok());
        let wide = Precision {
            half_width: 5.0,
            ..p
        };
        assert!(wide.validate().unwrap_err().contains("0.05 for ±5%"));
        let upside_down = Precision {
            min: Duration::from_secs(60),
            max: Duration::from_secs(10),
            ..p
        };
        assert!(upside_down
            .validate()
            .unwrap_err()
            .contains("must not exceed"));
    }

    #[test]
    fn the_run_ends_only_past_the_floor_and_within_the_target() {
        let p = Precision::default();
        let long = Duration::from_secs(40);
        assert!(p.reached(long, Some(0.04)));
        assert!(!p.reached(long, Some(0.06)));
        assert!(!p.reached(long, None));
        assert!(!p.reached(Duration::from_secs(20), Some(0.01)));
    }
}
