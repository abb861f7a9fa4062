//! Accumulates request records into run metrics.

use super::stats::LatencyStats;
use crate::probe::record::{ErrorKind, RequestRecord, TokenSource};
use crate::probe::LiveStats;
use crate::record::{metric, Latency, MetricMap, Slo};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Metric: successful replayed requests whose `usage.prompt_tokens` differs from the trace's.
pub(crate) const PROMPT_MISMATCHED: &str = "prompt_tokens_mismatched";
/// Metric: successful replayed requests whose `usage.completion_tokens` differs from the trace's.
pub(crate) const OUTPUT_MISMATCHED: &str = "output_tokens_mismatched";
/// Metric: successful replayed requests without usage to check.
pub(crate) const USAGE_UNREPORTED: &str = "usage_unreported";

/// Per-kind error count with the first message seen.
#[derive(Clone, Debug)]
pub(crate) struct ErrorTally {
    pub count: u64,
    pub example: String,
}

/// Running totals of the measured requests of one run.
pub(crate) struct Collector {
    streamed: bool,
    slos: Vec<(Slo, Latency)>,
    latencies: BTreeMap<Latency, LatencyStats>,
    pub completed: u64,
    pub failed: u64,
    pub incomplete: u64,
    good: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub incomplete_output_tokens: u64,
    pub errors: BTreeMap<ErrorKind, ErrorTally>,
    pub sources: BTreeMap<TokenSource, u64>,
    first_start: Option<Instant>,
    last_end: Option<Instant>,
    live: Option<LiveStats>,
    replay: Option<ReplayFidelity>,
    /// One collector per stage of a staged load.
    pub stages: Vec<Collector>,
}

/// How faithfully a trace was replayed: send lateness against its schedule, and the requests
/// whose usage disagrees with the trace's lengths.
#[derive(Clone, Debug, Default)]
struct ReplayFidelity {
    lateness: LatencyStats,
    prompt_mismatched: u64,
    output_mismatched: u64,
    unreported: u64,
}

impl Collector {
    /// A collector; `keep_samples` keeps per-request latencies for the pruning hook.
    pub fn new(streamed: bool, slos: &[Slo], keep_samples: bool) -> Self {
        Collector {
            streamed,
            slos: slos
                .iter()
                .filter_map(|s| Some((s.clone(), s.latency()?)))
                .collect(),
            latencies: Latency::ALL
                .into_iter()
                .map(|latency| (latency, LatencyStats::default()))
                .collect(),
            completed: 0,
            failed: 0,
            incomplete: 0,
            good: 0,
            input_tokens: 0,
            output_tokens: 0,
            incomplete_output_tokens: 0,
            errors: BTreeMap::new(),
            sources: BTreeMap::new(),
            first_start: None,
            last_end: None,
            live: keep_samples.then(LiveStats::default),
            replay: None,
            stages: Vec::new(),
        }
    }

    /// Also keeps the metrics of each of `count` stages apart.
    pub fn with_stages(mut self, count: usize) -> Self {
        self.stages = (0..count)
            .map(|_| Collector::new(self.streamed, &[], false))
            .collect();
        self.stages
            .iter_mut()
            .for_each(|stage| stage.slos.clone_from(&self.slos));
        self
    }

    /// Adds one measured request.
    pub fn add(&mut self, record: &RequestRecord) {
        let stage = record.stage.and_then(|s| self.stages.get_mut(s as usize));
        if let Some(stage) = stage {
            stage.add(record);
        }
        self.first_start = Some(
            self.first_start
                .map_or(record.start, |t| t.min(record.start)),
        );
        self.last_end = Some(self.last_end.map_or(record.end, |t| t.max(record.end)));
        if let Some(check) = &record.replay {
            let fidelity = self.replay.get_or_insert_with(ReplayFidelity::default);
            fidelity
                .lateness
                .record(record.start.saturating_duration_since(record.scheduled));
            if record.ok() {
                let output =
                    (record.output_source == TokenSource::Usage).then_some(record.output_tokens);
                match (check.reported_input, output) {
                    (Some(input), Some(output)) => {
                        fidelity.prompt_mismatched += u64::from(input != u64::from(check.input));
                        fidelity.output_mismatched += u64::from(output != u64::from(check.output));
                    }
                    _ => fidelity.unreported += 1,
                }
            }
        }
        if let Some(live) = &mut self.live {
            live.finished += 1;
            live.failed += u64::from(!record.ok());
        }
        if let Some(error) = &record.error {
            self.failed += 1;
            let tally = self.errors.entry(error.kind).or_insert_with(|| ErrorTally {
                count: 0,
                example: error.message.clone(),
            });
            tally.count += 1;
            if record.incomplete() {
                self.incomplete += 1;
                self.incomplete_output_tokens += record.output_tokens;
            }
            return;
        }
        self.completed += 1;
        self.input_tokens += record.input_tokens;
        self.output_tokens += record.output_tokens;
        *self.sources.entry(record.output_source).or_default() += 1;
        for (&latency, stats) in &mut self.latencies {
            record.samples(latency).for_each(|v| stats.record(v));
        }
        if self.meets_slos(record) {
            self.good += 1;
        }
        if let Some(live) = &mut self.live {
            for latency in Latency::ALL.into_iter().filter(|l| l.per_request()) {
                let values = live.latencies_ms.entry(latency).or_default();
                values.extend(record.latency(latency).map(ms));
            }
        }
    }

    /// Whether `record` meets every per-request latency SLO; TPOT and ITL hold as zero for a
    /// request too short to have them.
    fn meets_slos(&self, record: &RequestRecord) -> bool {
        self.slos.iter().all(|(slo, latency)| {
            let vacuous = matches!(latency, Latency::Tpot | Latency::Itl);
            let value = record
                .latency(*latency)
                .or_else(|| vacuous.then_some(Duration::ZERO));
            value.is_some_and(|v| slo.holds(ms(v)))
        })
    }

    /// Whether goodput can be judged: without streaming only `e2el` SLOs can.
    fn goodput_available(&self) -> bool {
        self.streamed || self.slos.iter().all(|(_, l)| *l == Latency::E2el)
    }

    /// Last request end − first request start.
    pub fn duration(&self) -> Duration {
        match (self.first_start, self.last_end) {
            (Some(start), Some(end)) => end.saturating_duration_since(start),
            _ => Duration::ZERO,
        }
    }

    /// A snapshot for the pruning hook.
    pub(crate) fn live_stats(
        &self,
        planned: u64,
        planned_output_tokens: u64,
        elapsed: Duration,
    ) -> LiveStats {
        let mut live = self.live.clone().unwrap_or_default();
        live.planned = planned;
        live.planned_output_tokens = planned_output_tokens;
        live.elapsed = elapsed;
        live
    }

    /// The summary metrics (names as in `vllm bench serve`).
    pub fn metrics(&self) -> MetricMap {
        let duration = self.duration().as_secs_f64();
        let per_second = |x: u64| {
            if duration > 0.0 {
                x as f64 / duration
            } else {
                0.0
            }
        };
        let finished = self.completed + self.failed;
        let mut m = MetricMap::new();
        m.insert(metric::COMPLETED.into(), self.completed as f64);
        m.insert(metric::FAILED.into(), self.failed as f64);
        m.insert(metric::INCOMPLETE.into(), self.incomplete as f64);
        let error_rate = if finished > 0 {
            self.failed as f64 / finished as f64
        } else {
            0.0
        };
        m.insert(metric::ERROR_RATE.into(), error_rate);
        m.insert(metric::DURATION_S.into(), duration);
        m.insert(metric::TOTAL_INPUT_TOKENS.into(), self.input_tokens as f64);
        m.insert(
            metric::TOTAL_OUTPUT_TOKENS.into(),
            self.output_tokens as f64,
        );
        m.insert(
            metric::INCOMPLETE_OUTPUT_TOKENS.into(),
            self.incomplete_output_tokens as f64,
        );
        m.insert(
            metric::REQUEST_THROUGHPUT.into(),
            per_second(self.completed),
        );
        m.insert(
            metric::OUTPUT_THROUGHPUT.into(),
            per_second(self.output_tokens),
        );
        m.insert(
            metric::TOTAL_TOKEN_THROUGHPUT.into(),
            per_second(self.input_tokens + self.output_tokens),
        );
        if self.goodput_available() {
            m.insert(metric::REQUEST_GOODPUT.into(), per_second(self.good));
        }
        for (latency, stats) in &self.latencies {
            let Some(summary) = stats.summary() else {
                continue;
            };
            for (stat, value) in summary.entries() {
                m.insert(latency.key(&stat), value);
            }
        }
        if let Some(replay) = &self.replay {
            if let Some(summary) = replay.lateness.summary() {
                for (stat, value) in summary.entries() {
                    m.insert(format!("{stat}_send_lateness_ms"), value);
                }
            }
            m.insert(PROMPT_MISMATCHED.into(), replay.prompt_mismatched as f64);
            m.insert(OUTPUT_MISMATCHED.into(), replay.output_mismatched as f64);
            m.insert(USAGE_UNREPORTED.into(), replay.unreported as f64);
        }
        m
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
