//! What the fake server actually delivered, request by request: the truth a client's
//! timings are compared with when the server itself falls behind, and the split of a
//! closed loop's lost throughput between the server's lateness and the client's turnaround.

use std::sync::{Arc, Mutex};
use tokio::time::{Duration, Instant};

/// One response as the server sent it.
#[derive(Clone, Copy)]
pub struct Served {
    /// The connection it went over.
    pub connection: usize,
    /// When its request arrived (the kernel's receive stamp).
    pub arrived: Instant,
    /// When the first token was written.
    pub first: Instant,
    /// When the last token was written.
    pub last: Instant,
}

/// Every completed response, shared with the thread that reports them.
#[derive(Clone, Default)]
pub struct ServedLog(Arc<Mutex<Vec<Served>>>);

/// Summary of the responses after a warmup, in milliseconds.
pub struct ServedSummary {
    /// Arrival to first token: mean and p99.
    pub ttft_mean: f64,
    pub ttft_p99: f64,
    /// Arrival to last token, mean.
    pub e2e_mean: f64,
    /// Last token of one response to the arrival of the next request on the same
    /// connection (the client's share of a closed loop's cycle), mean and p99.
    pub turnaround_mean: f64,
    pub turnaround_p99: f64,
}

impl ServedLog {
    pub(super) fn push(&self, served: Served) {
        self.0.lock().expect("log lock").push(served);
    }

    /// Summarises the responses logged since the last call, leaving out the first `skip`
    /// requests to arrive (the warmup), and empties the log.
    pub fn take_summary(&self, skip: usize) -> ServedSummary {
        let mut all = std::mem::take(&mut *self.0.lock().expect("log lock"));
        all.sort_by_key(|s| s.arrived);
        let measured = all.get(skip..).unwrap_or_default();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let mut ttft: Vec<f64> = measured.iter().map(|s| ms(s.first - s.arrived)).collect();
        let e2e: Vec<f64> = measured.iter().map(|s| ms(s.last - s.arrived)).collect();
        let mut turnaround = turnarounds(&all, skip);
        ServedSummary {
            ttft_mean: mean(&ttft),
            ttft_p99: p99(&mut ttft),
            e2e_mean: mean(&e2e),
            turnaround_mean: mean(&turnaround),
            turnaround_p99: p99(&mut turnaround),
        }
    }
}

/// For each measured request (index `skip` on, in arrival order) that followed another
/// measured one on its connection: the time from that one's last token to its own arrival,
/// in ms. The first measured request of a connection is left out: it waited for the whole
/// warmup to end.
fn turnarounds(all: &[Served], skip: usize) -> Vec<f64> {
    let mut previous_last: Vec<Option<Instant>> = Vec::new();
    let mut gaps = Vec::new();
    for served in all.iter().skip(skip) {
        if previous_last.len() <= served.connection {
            previous_last.resize(served.connection + 1, None);
        }
        let slot = &mut previous_last[served.connection];
        if let Some(last) = *slot {
            gaps.push(served.arrived.saturating_duration_since(last).as_secs_f64() * 1000.0);
        }
        *slot = Some(served.last);
    }
    gaps
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len().max(1) as f64
}

fn p99(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let rank = (values.len() * 99).div_ceil(100).saturating_sub(1);
    values.get(rank).copied().unwrap_or(f64::NAN)
}
