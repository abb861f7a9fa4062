//! The study's clock: time spent (by earlier runs too) and what is left of the budget.

use std::time::{Duration, Instant};

/// Time spent and left of the study's budget.
pub(crate) struct Clock {
    pub spent_before: f64,
    pub start: Instant,
    pub budget: Option<Duration>,
}

impl Clock {
    fn elapsed(&self) -> f64 {
        self.spent_before + self.start.elapsed().as_secs_f64()
    }

    pub fn left(&self) -> Option<Duration> {
        self.budget
            .map(|b| Duration::from_secs_f64((b.as_secs_f64() - self.elapsed()).max(0.0)))
    }
}
