//! The steady-state figure of a run and its confidence interval.
//!
//! Output tokens are counted when they stream (each token-bearing event, as it arrives), in
//! bins of [`BIN`], so a round of lockstep requests adds its tokens while it decodes instead of
//! all at once when it completes: the figure no longer jumps with the number of whole rounds a
//! window holds. The **steady-state window** opens when the measured phase's first request
//! completes (the ramp-up before it, while the load fills the server, is left out; in a
//! lockstep closed loop that is the end of the first round) and closes when the run stops
//! sending (the drain after it, with fewer requests in flight, is left out; in lockstep, the
//! start of the last round), so lockstep rounds enter whole.
//! Its interval comes from **batch means**: the window is cut into [`BATCHES`] equal batches
//! and the half-width is Student's t (`BATCHES − 1` degrees of freedom) times the standard
//! error of their mean; batches longer than the correlation of the load (a round) make it
//! honest, shorter ones make it wide, never narrow.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Width of one counting bin.
pub const BIN: Duration = Duration::from_millis(250);
/// Batches the window is cut into.
pub const BATCHES: usize = 10;
/// Least bins in a batch: a window shorter than `BATCHES × MIN_BATCH_BINS` bins has no interval.
const MIN_BATCH_BINS: usize = 2;
/// Two-sided 97.5% quantile of Student's t with `BATCHES − 1` = 9 degrees of freedom.
const T_975_9: f64 = 2.262;

/// Token-bearing events of the measured phase, counted per bin from the moment it is armed.
#[derive(Debug, Default)]
pub(crate) struct TokenTally {
    inner: Mutex<Tally>,
}

#[derive(Debug, Default)]
struct Tally {
    origin: Option<Instant>,
    bins: Vec<u64>,
}

impl TokenTally {
    /// Starts counting at `origin` (the measured phase's start); events before are ignored.
    pub fn arm(&self, origin: Instant) {
        let mut tally = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        *tally = Tally {
            origin: Some(origin),
            bins: Vec::new(),
        };
    }

    /// Counts one token-bearing event that arrived at `at`.
    pub fn add(&self, at: Instant) {
        let mut tally = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let Some(origin) = tally.origin else { return };
        let Some(since) = at.checked_duration_since(origin) else {
            return;
        };
        let bin = (since.as_nanos() / BIN.as_nanos()) as usize;
        if tally.bins.len() <= bin {
            tally.bins.resize(bin + 1, 0);
        }
        tally.bins[bin] += 1;
    }

    /// The event rate of the window from `from` to `to`, with its interval; `None` before
    /// arming or for an empty window.
    pub fn estimate(&self, from: Instant, to: Instant) -> Option<Estimate> {
        let tally = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let origin = tally.origin?;
        let bin = |at: Instant| {
            let since = at.checked_duration_since(origin).unwrap_or_default();
            (since.as_nanos() / BIN.as_nanos()) as usize
        };
        let (first, last) = (bin(from), bin(to));
        if last <= first {
            return None;
        }
        let mut bins = vec![0; last - first];
        let known = tally.bins.len().min(last);
        if known > first {
            bins[..known - first].copy_from_slice(&tally.bins[first..known]);
        }
        Some(Estimate::of(&bins))
    }
}

/// Events per second over a window, with the half-width of its 95% interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// Events per second over the window.
    pub rate: f64,
    /// Half-width of the 95% interval of `rate` (batch means); `None` for a window too short.
    pub half_width: Option<f64>,
    /// The window's length.
    pub window: Duration,
}

impl Estimate {
    /// The rate of `bins` (consecutive [`BIN`]s) and its batch-means interval; whole batches
    /// are taken from the window's end, the few bins left over at its start only enter the rate.
    pub fn of(bins: &[u64]) -> Estimate {
        let per_second = |events: u64, n: usize| events as f64 / (n as f64 * BIN.as_secs_f64());
        let rate = per_second(bins.iter().sum(), bins.len());
        let size = bins.len() / BATCHES;
        let half_width = (size >= MIN_BATCH_BINS).then(|| {
            let batched = &bins[bins.len() - size * BATCHES..];
            let means: Vec<f64> = batched
                .chunks(size)
                .map(|b| per_second(b.iter().sum(), size))
                .collect();
            let mean = means.iter().sum::<f64>() / BATCHES as f64;
            let var = means.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / (BATCHES - 1) as f64;
            T_975_9 * (var / BATCHES as f64).sqrt()
        });
        Estimate {
            rate,
            half_width,
            window: BIN * bins.len() as u32,
        }
    }

    /// The half-width relative to the rate; `None` without an interval or a rate.
    pub fn relative(&self) -> Option<f64> {
        self.half_width
            .filter(|_| self.rate > 0.0)
            .map(|h| h / self.rate)
    }

    /// The same window in output tokens: every rate times `tokens_per_event`.
    pub fn scaled(self, tokens_per_event: f64) -> Estimate {
        Estimate {
            rate: self.rate * tokens_per_event,
            half_width: self.half_width.map(|h| h * tokens_per_event),
            window: self.window,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steady_rate_has_a_narrow_interval_and_a_short_window_none() {
        let steady = Estimate::of(&[25; 40]);
        assert!((steady.rate - 100.0).abs() < 1e-9);
        assert_eq!(steady.half_width, Some(0.0));
        assert_eq!(Estimate::of(&[25; 19]).half_width, None);
    }

    #[test]
    fn noisy_batches_widen_the_interval() {
        let bins: Vec<u64> = (0..40)
            .map(|i| if (i / 4) % 2 == 0 { 10 } else { 40 })
            .collect();
        let e = Estimate::of(&bins);
        assert!((e.rate - 100.0).abs() < 1e-9);
        // Batch means alternate 40 and 160 events/s: sd 63.2, se 20.0, half-width 45.2.
        let half = e.half_width.unwrap();
        assert!((half - T_975_9 * 20.0).abs() < 0.1, "{half}");
        assert!((e.relative().unwrap() - half / 100.0).abs() < 1e-12);
    }

    #[test]
    fn the_window_counts_only_its_own_bins_and_nothing_before_arming() {
        let tally = TokenTally::default();
        let origin = Instant::now();
        let at = |s: f64| origin + Duration::from_secs_f64(s);
        tally.add(at(1.0));
        tally.arm(origin);
        for i in 0..120u32 {
            tally.add(at(0.0625 + 0.125 * f64::from(i)));
        }
        let e = tally.estimate(at(2.0), at(12.0)).unwrap();
        assert_eq!(e.window, Duration::from_secs(10));
        assert!((e.rate - 8.0).abs() < 1e-9, "{e:?}");
        let past_the_events = tally.estimate(at(10.0), at(20.0)).unwrap();
        assert!(
            (past_the_events.rate - 4.0).abs() < 1e-9,
            "{past_the_events:?}"
        );
        assert_eq!(tally.estimate(at(3.0), at(3.1)), None);
        assert_eq!(TokenTally::default().estimate(origin, at(5.0)), None);
    }
}
