//! The steady-state figure of a run and its confidence interval.
//!
//! Each completed request's output tokens (as its usage, tokenizer or events counted them) are
//! spread evenly over its life, from send to end, in bins of [`BIN`]. Counting per request,
//! not per streamed event, keeps the figure right when a server merges tokens into few chunks
//! or streams them as empty text (vLLM does both on a loaded CPU and for a random-weight
//! model), and spreading them over the life means a round of lockstep requests adds its tokens
//! across the round instead of all at once when it completes: the figure does not jump with
//! the number of whole rounds a window holds. Bins are complete up to the **horizon**, the
//! send of the oldest request still in flight. The **steady-state window** opens when the
//! measured phase's first request completes (the ramp-up before it, while the load fills the
//! server, is left out; in a lockstep closed loop that is the end of the first round) and
//! closes when the run stops sending (the drain after it is left out) or, when it stops on its
//! interval, at the horizon.
//! Its interval comes from **batch means**: the window is cut into at most [`BATCHES`] equal
//! batches, each at least as long as the mean request life (spread tokens correlate bins
//! within a life), and the half-width is Student's t times the standard error of their mean;
//! a window of fewer than [`MIN_BATCHES`] such batches has no interval.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Width of one counting bin.
pub const BIN: Duration = Duration::from_millis(250);
/// Most batches the window is cut into.
pub const BATCHES: usize = 10;
/// Fewest batches that give an interval.
pub const MIN_BATCHES: usize = 5;
/// Least bins in a batch.
const MIN_BATCH_BINS: usize = 2;
/// Two-sided 97.5% quantiles of Student's t for `MIN_BATCHES − 1` ..= `BATCHES − 1` degrees
/// of freedom.
const T_975: [f64; BATCHES - MIN_BATCHES + 1] = [2.776, 2.571, 2.447, 2.365, 2.306, 2.262];

/// Output tokens of the measured phase per bin, from the moment it is armed, and the requests
/// in flight.
#[derive(Debug, Default)]
pub(crate) struct TokenTally {
    inner: Mutex<Tally>,
}

#[derive(Debug, Default)]
struct Tally {
    origin: Option<Instant>,
    bins: Vec<f64>,
    /// Sends of the requests in flight, by ticket.
    open: BTreeMap<u64, Instant>,
    next_ticket: u64,
    /// Summed life and count of the requests landed since arming.
    lived: Duration,
    landed: u32,
}

/// A request in flight; dropping it without [`OpenRequest::land`] (an aborted request) counts
/// nothing.
pub(crate) struct OpenRequest {
    tally: Arc<TokenTally>,
    ticket: u64,
    sent: Instant,
}

impl OpenRequest {
    /// The request ended at `end` with `tokens` output tokens: they are spread over its life.
    pub fn land(self, tokens: u64, end: Instant) {
        let mut tally = self.tally.lock();
        tally.open.remove(&self.ticket);
        tally.spread(tokens as f64, self.sent, end);
    }
}

impl Drop for OpenRequest {
    fn drop(&mut self) {
        self.tally.lock().open.remove(&self.ticket);
    }
}

impl TokenTally {
    fn lock(&self) -> std::sync::MutexGuard<'_, Tally> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts counting at `origin` (the measured phase's start); tokens before are dropped.
    pub fn arm(&self, origin: Instant) {
        let mut tally = self.lock();
        tally.origin = Some(origin);
        tally.bins.clear();
        tally.lived = Duration::ZERO;
        tally.landed = 0;
    }

    /// A request sent at `sent`, in flight until landed or dropped.
    pub fn open(self: &Arc<Self>, sent: Instant) -> OpenRequest {
        let mut tally = self.lock();
        let ticket = tally.next_ticket;
        tally.next_ticket += 1;
        tally.open.insert(ticket, sent);
        OpenRequest {
            tally: self.clone(),
            ticket,
            sent,
        }
    }

    /// The latest moment up to which every bin is complete: `now`, or the send of the oldest
    /// request still in flight.
    pub fn horizon(&self, now: Instant) -> Instant {
        self.lock().open.values().fold(now, |h, &sent| h.min(sent))
    }

    /// The token rate of the window from `from` to `to`, with its interval; `None` before
    /// arming or for an empty window.
    pub fn estimate(&self, from: Instant, to: Instant) -> Option<Estimate> {
        let tally = self.lock();
        let origin = tally.origin?;
        let bin = |at: Instant| {
            let since = at.checked_duration_since(origin).unwrap_or_default();
            (since.as_nanos() / BIN.as_nanos()) as usize
        };
        let (first, last) = (bin(from), bin(to));
        if last <= first {
            return None;
        }
        let mut bins = vec![0.0; last - first];
        let known = tally.bins.len().min(last);
        if known > first {
            bins[..known - first].copy_from_slice(&tally.bins[first..known]);
        }
        let life = match tally.landed {
            0 => Duration::ZERO,
            n => tally.lived / n,
        };
        let least = (life.as_nanos().div_ceil(BIN.as_nanos()) as usize).max(MIN_BATCH_BINS);
        Some(Estimate::of(&bins, least))
    }
}

impl Tally {
    /// Adds `tokens` evenly over `from..to` (all in `to`'s bin for an instant), dropping the
    /// part before the origin.
    fn spread(&mut self, tokens: f64, from: Instant, to: Instant) {
        let Some(origin) = self.origin else { return };
        let life = to.saturating_duration_since(from);
        self.lived += life;
        self.landed += 1;
        let since = |t: Instant| t.saturating_duration_since(origin).as_secs_f64();
        let (start, end, bin) = (since(from), since(to), BIN.as_secs_f64());
        let (first, last) = ((start / bin) as usize, (end / bin) as usize);
        if self.bins.len() <= last {
            self.bins.resize(last + 1, 0.0);
        }
        if life.is_zero() {
            self.bins[last] += tokens;
            return;
        }
        let rate = tokens / life.as_secs_f64();
        for (i, count) in self.bins[first..=last].iter_mut().enumerate() {
            let (lo, hi) = ((first + i) as f64 * bin, (first + i + 1) as f64 * bin);
            *count += rate * (hi.min(end) - lo.max(start)).max(0.0);
        }
    }
}

/// Tokens per second over a window, with the half-width of its 95% interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// Tokens per second over the window.
    pub rate: f64,
    /// Half-width of the 95% interval of `rate` (batch means); `None` for a window too short.
    pub half_width: Option<f64>,
    /// The window's length.
    pub window: Duration,
}

impl Estimate {
    /// The rate of `bins` (consecutive [`BIN`]s) and its batch-means interval over batches of
    /// at least `least` bins; whole batches are taken from the window's end, the few bins left
    /// over at its start only enter the rate.
    pub fn of(bins: &[f64], least: usize) -> Estimate {
        let per_second = |tokens: f64, n: usize| tokens / (n as f64 * BIN.as_secs_f64());
        let rate = per_second(bins.iter().sum(), bins.len());
        let size = (bins.len() / BATCHES).max(least.max(MIN_BATCH_BINS));
        let batches = (bins.len() / size).min(BATCHES);
        let half_width = (batches >= MIN_BATCHES).then(|| {
            let batched = &bins[bins.len() - size * batches..];
            let means: Vec<f64> = batched
                .chunks(size)
                .map(|b| per_second(b.iter().sum(), size))
                .collect();
            let n = batches as f64;
            let mean = means.iter().sum::<f64>() / n;
            let var = means.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / (n - 1.0);
            T_975[batches - MIN_BATCHES] * (var / n).sqrt()
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steady_rate_has_a_narrow_interval_and_a_short_window_none() {
        let steady = Estimate::of(&[25.0; 40], 1);
        assert!((steady.rate - 100.0).abs() < 1e-9);
        assert_eq!(steady.half_width, Some(0.0));
        assert_eq!(Estimate::of(&[25.0; 9], 1).half_width, None);
        // Batches at least a request's life long: 40 bins hold only four batches of nine.
        assert_eq!(Estimate::of(&[25.0; 40], 9).half_width, None);
        assert_eq!(Estimate::of(&[25.0; 40], 9).rate, 100.0);
    }

    #[test]
    fn noisy_batches_widen_the_interval() {
        let bins: Vec<f64> = (0..40)
            .map(|i| if (i / 4) % 2 == 0 { 10.0 } else { 40.0 })
            .collect();
        let e = Estimate::of(&bins, 1);
        assert!((e.rate - 100.0).abs() < 1e-9);
        // Batch means alternate 40 and 160 tokens/s: sd 63.2, se 20.0, half-width 45.2.
        let half = e.half_width.unwrap();
        assert!((half - 2.262 * 20.0).abs() < 0.1, "{half}");
        assert!((e.relative().unwrap() - half / 100.0).abs() < 1e-12);
        // Batches of eight bins: five means of 100 tokens/s, no spread left.
        assert_eq!(Estimate::of(&bins, 8).half_width, Some(0.0));
    }

    #[test]
    fn a_request_spreads_its_tokens_over_its_life_from_arming_on() {
        let tally = Arc::new(TokenTally::default());
        let origin = Instant::now();
        let at = |s: f64| origin + Duration::from_secs_f64(s);
        tally.open(at(0.0)).land(40, at(1.0));
        tally.arm(origin);
        // Sent half a second before arming: half its tokens fall before and are dropped.
        tally
            .open(origin - Duration::from_millis(500))
            .land(20, at(0.5));
        for i in 0..12 {
            tally.open(at(f64::from(i))).land(8, at(f64::from(i + 1)));
        }
        let e = tally.estimate(at(2.0), at(12.0)).unwrap();
        assert_eq!(e.window, Duration::from_secs(10));
        assert!((e.rate - 8.0).abs() < 1e-9, "{e:?}");
        let first = tally.estimate(at(0.0), at(1.0)).unwrap();
        assert!((first.rate - 18.0).abs() < 1e-9, "{first:?}");
        let past_the_requests = tally.estimate(at(10.0), at(14.0)).unwrap();
        assert!((past_the_requests.rate - 4.0).abs() < 1e-9);
        assert_eq!(tally.estimate(at(3.0), at(3.1)), None);
        assert_eq!(TokenTally::default().estimate(origin, at(5.0)), None);
    }

    #[test]
    fn bins_are_complete_up_to_the_oldest_request_in_flight() {
        let tally = Arc::new(TokenTally::default());
        let origin = Instant::now();
        let at = |s: f64| origin + Duration::from_secs_f64(s);
        tally.arm(origin);
        assert_eq!(tally.horizon(at(9.0)), at(9.0));
        let older = tally.open(at(3.0));
        let newer = tally.open(at(5.0));
        assert_eq!(tally.horizon(at(9.0)), at(3.0));
        drop(older);
        assert_eq!(tally.horizon(at(9.0)), at(5.0));
        newer.land(10, at(6.0));
        assert_eq!(tally.horizon(at(9.0)), at(9.0));
        let e = tally.estimate(at(5.0), at(6.0)).unwrap();
        assert!((e.rate - 10.0).abs() < 1e-9, "{e:?}");
    }
}
