//! Small general helpers shared across the crate: typo suggestions, running a helper program
//! with a timeout, replacing files whole, order statistics. Like `record`, it imports nothing
//! of the crate.

use std::time::Duration;

pub mod atomic;
pub mod files;
pub mod parallel;
pub mod process;
pub mod stats;
mod suggest;

pub(crate) use suggest::did_you_mean;

/// The longest duration any input may give (timeouts, grace periods, budgets, load
/// durations): a year is far beyond any study, and far from overflowing a clock reading plus
/// the duration.
pub(crate) const MAX_DURATION: Duration = Duration::from_secs(MAX_DURATION_DAYS * 24 * 3600);

/// [`MAX_DURATION`] in days, for messages.
pub(crate) const MAX_DURATION_DAYS: u64 = 365;

/// A boolean as data files spell it: `true`/`false` in any case, or `1`/`0`; `None` otherwise.
pub(crate) fn boolean(text: &str) -> Option<bool> {
    match text.trim() {
        "1" => Some(true),
        "0" => Some(false),
        t if t.eq_ignore_ascii_case("true") => Some(true),
        t if t.eq_ignore_ascii_case("false") => Some(false),
        _ => None,
    }
}

/// Seconds since the Unix epoch, now (0 on a clock set before it).
pub(crate) fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
