//! One probe run: warmup, the measured phase, pruning checks, and the report.

use super::dataset::RequestStream;
use super::exchange::Exchange;
use super::http::Endpoint;
use super::load::{self, Feed, Message, Pool, Shape};
use super::metrics::Collector;
use super::plan::Plan;
use super::record::RequestRecord;
use super::steady::{Estimate, TokenTally};
use super::watcher::ArrivalWatcher;
use super::workload::WorkloadSpec;
use super::Precision;
use super::{limits, report, EarlyStop, ProbeReport, RunOptions, Target};
use crate::record::metric;
use anyhow::Result;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

/// How often the pruning hook is consulted.
const PRUNE_EVERY: Duration = Duration::from_millis(250);

/// What a phase's requests add up to (zeros for a duration-bound phase).
#[derive(Clone, Copy, Debug, Default)]
struct Planned {
    /// Measured requests.
    requests: u64,
    /// Their `max_tokens`: the most output tokens they can generate.
    output_tokens: u64,
}

/// What every phase of a run shares.
struct Phases<'a> {
    exchange: Arc<Exchange>,
    pool: Pool,
    options: &'a RunOptions,
    /// When the measured phase may end on its interval.
    precision: Option<Precision>,
}

/// Runs `workload` against `target`, handing every measured request to `on_record`.
pub(crate) async fn run(
    target: &Target,
    workload: &WorkloadSpec,
    options: RunOptions,
    on_record: &mut (dyn FnMut(&RequestRecord) + Send),
) -> Result<ProbeReport> {
    let plan = Plan::new(workload)?;
    limits::ensure_open_files(plan.max_in_flight())?;
    let mut stream = RequestStream::new(workload)?;
    let replay = stream.replay_summary();
    let phases = Phases {
        exchange: Arc::new(Exchange {
            endpoint: Endpoint::new(target, workload.api)?,
            stream: workload.stream,
            timeout: workload.timeout,
            stall_timeout: workload.stall_timeout,
            tokenizer: stream.tokenizer(),
            watcher: workload
                .stream
                .then(ArrivalWatcher::start)
                .and_then(Result::ok),
            tally: Arc::new(TokenTally::default()),
        }),
        pool: Pool::default(),
        options: &options,
        precision: workload.precision,
    };
    let report = |collector: &Collector, warmup: Option<&Collector>, ended: Ended| {
        let mut metrics = collector.metrics();
        add_steady(&mut metrics, ended.steady, workload);
        let pruned = ended.pruned;
        if let Some(warmup) = warmup {
            metrics.insert(
                crate::record::metric::WARMUP_OUTPUT_TOKENS.into(),
                (warmup.output_tokens + warmup.incomplete_output_tokens) as f64,
            );
        }
        let path = phases.exchange.endpoint.path();
        let mut json = report::json(target, workload, &plan, path, collector, &metrics, &pruned);
        if let Some(replay) = &replay {
            json["trace_replay"] = replay.clone();
        }
        ProbeReport {
            metrics,
            stages: collector.stages.iter().map(Collector::metrics).collect(),
            pruned,
            json,
        }
    };
    let mut collector = Collector::new(workload.stream, &workload.slo, options.prune.is_some());
    if let Shape::Stages { stages, .. } = &plan.shape {
        collector = collector.with_stages(stages.len());
    }
    let mut warmup = None;
    let warmup_requests = workload.warmup_requests();
    if warmup_requests > 0 {
        let requests = (0..warmup_requests)
            .map(|_| stream.next_request())
            .collect::<Result<_>>()?;
        let concurrency = plan
            .max_in_flight()
            .unwrap_or(warmup_requests)
            .min(warmup_requests);
        let feed = Feed::prebuilt(requests, &target.model);
        let mut warmed = Collector::new(workload.stream, &[], false);
        let shape = Shape::Closed { concurrency };
        let pruned = phases
            .run(
                shape,
                feed,
                &mut warmed,
                Planned::default(),
                &mut |_| {},
                false,
            )
            .await?;
        if pruned.pruned.is_some() {
            return Ok(report(&collector, Some(&warmed), pruned.unmeasured()));
        }
        warmup = Some(warmed);
    }
    let Some(n) = plan.requests else {
        let feed = Feed::lazy(stream, &target.model, plan.duration);
        let pruned = phases
            .run(
                plan.shape.clone(),
                feed,
                &mut collector,
                Planned::default(),
                on_record,
                true,
            )
            .await?;
        return Ok(report(&collector, warmup.as_ref(), pruned));
    };
    let requests: Vec<_> = (0..n)
        .map(|_| stream.next_request())
        .collect::<Result<_>>()?;
    let planned = Planned::of(&requests);
    let prebuilt = |requests| {
        let feed = Feed::prebuilt(requests, &target.model);
        match plan.duration {
            Some(duration) => feed.with_duration(duration),
            None => feed,
        }
    };
    let pruned = phases
        .run(
            plan.shape.clone(),
            prebuilt(requests),
            &mut collector,
            planned,
            on_record,
            true,
        )
        .await?;
    Ok(report(&collector, warmup.as_ref(), pruned))
}

impl Planned {
    /// What `requests` add up to.
    fn of(requests: &[crate::probe::dataset::PlannedRequest]) -> Planned {
        Planned {
            requests: requests.len() as u64,
            output_tokens: requests.iter().map(|r| u64::from(r.max_tokens)).sum(),
        }
    }
}

impl Phases<'_> {
    /// Runs one phase to its end (or until the pruning hook stops it); returns the reason. The
    /// progress observer (if any) watches it when `observed`.
    async fn run(
        &self,
        shape: Shape,
        feed: Feed,
        collector: &mut Collector,
        planned: Planned,
        on_record: &mut (dyn FnMut(&RequestRecord) + Send),
        observed: bool,
    ) -> Result<Ended> {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut tasks = JoinSet::new();
        let started = Instant::now();
        let tally = &self.exchange.tally;
        if observed {
            tally.arm(started);
        }
        let (exchange, pool) = (self.exchange.clone(), self.pool.clone());
        load::spawn(shape, Arc::new(feed), exchange, pool, tx, &mut tasks);
        let progress = self.options.progress.as_deref().filter(|_| observed);
        if let Some(progress) = progress {
            progress.started(planned.requests);
        }
        let mut tick = tokio::time::interval(PRUNE_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let prune = self.options.prune.as_ref();
        let precision = self.precision.filter(|_| observed);
        let mut sent = SentTokens::default();
        let outcome = loop {
            tokio::select! {
                message = rx.recv() => match message {
                    Some(Message::Record(record)) => {
                        collector.add(&record);
                        sent.add(&record);
                        on_record(&record);
                        if let Some(progress) = progress {
                            progress.request_done();
                        }
                    }
                    Some(Message::Fatal(error)) => break Err(error),
                    None => break Ok(None),
                },
                _ = tick.tick(), if prune.is_some() || precision.is_some() => {
                    let pruned = prune.and_then(|hook| {
                        let elapsed = started.elapsed();
                        hook(&collector.live_stats(planned.requests, planned.output_tokens, elapsed))
                    });
                    if let Some(reason) = pruned {
                        break Ok(Some(reason));
                    }
                    let horizon = tally.horizon(Instant::now());
                    let estimate = sent.first_end.and_then(|from| tally.estimate(from, horizon));
                    if let (Some(precision), Some(estimate)) = (precision, estimate) {
                        if precision.reached(estimate.window, estimate.relative()) {
                            sent.stopped = Some(horizon);
                            break Ok(None);
                        }
                    }
                }
            }
        };
        tasks.abort_all();
        if let Some(progress) = progress {
            progress.finished();
        }
        let steady = observed
            .then(|| {
                sent.window()
                    .and_then(|(from, to)| tally.estimate(from, to))
            })
            .flatten();
        outcome.map(|pruned| Ended { pruned, steady })
    }
}

/// How a phase ended: why it stopped early, if it did, and its steady-state figure.
struct Ended {
    pruned: Option<EarlyStop>,
    /// Output tokens/s over the steady-state window, with its interval (measured phase only).
    steady: Option<Estimate>,
}

impl Ended {
    /// The same end, with nothing measured (a warm-up).
    fn unmeasured(self) -> Ended {
        Ended {
            steady: None,
            ..self
        }
    }
}

/// What the phase's finished requests say about its steady-state window: from the first
/// completion to the last send, or to the horizon at which the probe stopped on its interval.
#[derive(Default)]
struct SentTokens {
    first_end: Option<Instant>,
    last_start: Option<Instant>,
    stopped: Option<Instant>,
}

impl SentTokens {
    /// The steady-state window, once a request has completed.
    fn window(&self) -> Option<(Instant, Instant)> {
        Some((self.first_end?, self.stopped.or(self.last_start)?))
    }

    fn add(&mut self, record: &RequestRecord) {
        self.first_end = Some(self.first_end.map_or(record.end, |e| e.min(record.end)));
        self.last_start = self.last_start.max(Some(record.start));
    }
}

/// Adds the steady-state figure to `metrics`: `steady_output_throughput`, its interval's
/// half-width `steady_output_throughput_hw95` and `steady_window_s`; with `precision` the
/// run's `output_throughput` is that figure (`output_throughput_hw95` its half-width) and
/// `precision_reached` says whether the interval met its target.
fn add_steady(
    metrics: &mut crate::record::MetricMap,
    steady: Option<Estimate>,
    workload: &WorkloadSpec,
) {
    let Some(steady) = steady else { return };
    let mut put = |name: &str, value: f64| metrics.insert(name.to_string(), value);
    put(metric::STEADY_OUTPUT_THROUGHPUT, steady.rate);
    put(metric::STEADY_WINDOW_S, steady.window.as_secs_f64());
    if let Some(half) = steady.half_width {
        put(
            &metric::half_width_of(metric::STEADY_OUTPUT_THROUGHPUT),
            half,
        );
    }
    if let Some(precision) = workload.precision {
        put(metric::OUTPUT_THROUGHPUT, steady.rate);
        if let Some(half) = steady.half_width {
            put(&metric::half_width_of(metric::OUTPUT_THROUGHPUT), half);
        }
        let reached = precision.reached(steady.window, steady.relative());
        put(metric::PRECISION_REACHED, f64::from(u8::from(reached)));
    }
}
