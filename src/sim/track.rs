//! What the simulated client sees of one request, recorded as the probe records a real one so
//! that the probe's collector computes the metrics.

use super::requests::RequestShape;
use crate::probe::{ErrorKind, RequestError, RequestRecord, TokenSource};
use std::time::{Duration, Instant};

/// One request's client-side times, in virtual seconds from the run's start.
pub(super) struct Track {
    shape: RequestShape,
    /// Sent after the warm-up.
    pub measured: bool,
    /// When it was due: its arrival (open loop) or the moment its worker was free (closed).
    scheduled: f64,
    /// When it was sent.
    pub send: f64,
    /// The stage of a staged load it belongs to.
    stage: Option<u32>,
    first: Option<f64>,
    last: f64,
    tokens: u32,
    gaps: Vec<Duration>,
    /// When it ended, once it has.
    pub end: Option<f64>,
    error: Option<RequestError>,
}

impl Track {
    /// A request (of `stage`) due at `scheduled` and sent at `send`.
    pub fn new(
        shape: RequestShape,
        measured: bool,
        scheduled: f64,
        send: f64,
        stage: Option<u32>,
    ) -> Track {
        Track {
            shape,
            measured,
            scheduled: scheduled.min(send),
            send,
            stage,
            first: None,
            last: send,
            tokens: 0,
            gaps: Vec::new(),
            end: None,
            error: None,
        }
    }

    /// A token became visible at `now`.
    pub fn token(&mut self, now: f64) {
        if self.first.is_none() {
            self.first = Some(now);
        } else if self.measured {
            self.gaps.push(Duration::from_secs_f64(now - self.last));
        }
        self.last = now;
        self.tokens += 1;
    }

    /// The request completed with its last token.
    pub fn complete(&mut self) {
        self.end = Some(self.last);
    }

    /// The request failed at `at` as `kind`.
    pub fn fail(&mut self, at: f64, kind: ErrorKind, message: String) {
        self.end = Some(at);
        self.error = Some(RequestError {
            kind,
            status: (kind == ErrorKind::Http).then_some(400),
            message,
        });
    }

    /// The probe's record of this ended request, as request `index` of the run; `epoch` is the
    /// instant virtual time 0 stands for. Its gaps move into the record.
    pub(crate) fn take_record(&mut self, index: u64, epoch: Instant) -> RequestRecord {
        let at = |seconds: f64| epoch + Duration::from_secs_f64(seconds);
        RequestRecord {
            index,
            scheduled: at(self.scheduled),
            start: at(self.send),
            first_token: self.first.map(at),
            last_token: self.first.map(|_| at(self.last)),
            end: at(self.end.unwrap_or(self.last)),
            itl: std::mem::take(&mut self.gaps),
            input_tokens: u64::from(self.shape.prompt),
            output_tokens: u64::from(self.tokens),
            output_source: TokenSource::Usage,
            token_events: u64::from(self.tokens),
            streamed: true,
            error: self.error.take(),
            replay: None,
            stage: self.stage,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::metrics::Collector;

    /// A measured request sent at `send` whose `tokens` arrive evenly from `first` to `last`.
    fn completed(send: f64, first: f64, last: f64, tokens: u32) -> Track {
        let shape = RequestShape {
            prompt: 10,
            output: tokens,
            content: Default::default(),
        };
        let mut track = Track::new(shape, true, send, send, None);
        let step = (last - first) / f64::from(tokens - 1);
        (0..tokens).for_each(|i| track.token(first + step * f64::from(i)));
        track.complete();
        track
    }

    #[test]
    fn definitions_match_the_probe() {
        let shape = RequestShape {
            prompt: 10,
            output: 11,
            content: Default::default(),
        };
        let mut timed_out = Track::new(shape, true, 1.0, 1.0, None);
        timed_out.fail(4.0, ErrorKind::Timeout, "no response".into());
        let slos = vec!["ttft:p99<=800ms".parse().unwrap()];
        let mut collector = Collector::new(true, &slos, false);
        let epoch = Instant::now();
        let tracks = [
            completed(0.0, 0.5, 1.5, 11),
            completed(0.0, 1.0, 3.0, 11),
            timed_out,
        ];
        for (index, mut track) in tracks.into_iter().enumerate() {
            collector.add(&track.take_record(index as u64, epoch));
        }
        let m = collector.metrics();
        assert_eq!(m["completed"], 2.0);
        assert_eq!(m["failed"], 1.0);
        assert!((m["error_rate"] - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(m["duration_s"], 4.0);
        assert_eq!(m["output_throughput"], 22.0 / 4.0);
        assert_eq!(m["request_goodput"], 1.0 / 4.0);
        assert_eq!(m["mean_ttft_ms"], 750.0);
        assert!((m["mean_tpot_ms"] - 150.0).abs() < 1e-9);
        assert!((m["p50_itl_ms"] - 100.0).abs() < 1e-9);
        assert_eq!(m["max_e2el_ms"], 3000.0);
    }

    #[test]
    fn empty_runs_have_no_latencies() {
        let m = Collector::new(true, &[], false).metrics();
        assert_eq!(m["completed"], 0.0);
        assert!(!m.contains_key("mean_ttft_ms"));
    }
}
