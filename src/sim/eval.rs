//! `sim eval`: a workload driven against the simulated engine in virtual time.

use super::config::{Deployment, EngineConfig, SimFailure};
use super::core::SimEngine;
use super::requests::{self, Limits, Load, RequestSource};
use super::scheduler::Event;
use super::track::Track;
use crate::probe::metrics::Collector;
use crate::probe::{ErrorKind, WorkloadSpec};
use crate::record::{MetricMap, Params};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Instant;

/// Virtual seconds a refused request takes to come back (an HTTP 400 round trip).
const REFUSAL_SECONDS: f64 = 0.001;

/// Modelled seconds from launch until `params` serves on `deployment`, or until its start-up
/// failure shows (0 for a config refused while its arguments are read).
pub fn startup_seconds(deployment: &Deployment, params: &Params) -> f64 {
    let Ok(config) = EngineConfig::resolve(deployment, params) else {
        return 0.0;
    };
    match super::memory::kv_capacity(&config) {
        Ok(_) => super::memory::startup_seconds(&config),
        Err(_) => super::memory::load_done_seconds(&config),
    }
}

/// What a simulated run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    /// The probe's metrics of the whole run.
    pub metrics: MetricMap,
    /// The same metrics for each stage of a staged load, in order (empty otherwise).
    pub stages: Vec<MetricMap>,
    /// Prompt tokens the engine looked up in its prefix cache, as vLLM's
    /// `prefix_cache_queries` counter counts them.
    pub prefix_cache_queries: u64,
    /// Of those, the tokens it found (`prefix_cache_hits`).
    pub prefix_cache_hits: u64,
}

/// Simulate `workload` against `deployment` configured with `params`; deterministic by `seed`
/// (engine noise) and `workload.seed` (request lengths, arrivals). Returns the probe's metrics,
/// computed by the probe's collector from the measured requests, or the failure the engine
/// would have had at start.
pub fn eval(
    deployment: &Deployment,
    params: &Params,
    workload: &WorkloadSpec,
    seed: u64,
) -> Result<MetricMap, SimFailure> {
    evaluate(deployment, params, workload, seed).map(|e| e.metrics)
}

/// [`eval`] with the metrics of each stage and the prefix cache's counters.
pub fn evaluate(
    deployment: &Deployment,
    params: &Params,
    workload: &WorkloadSpec,
    seed: u64,
) -> Result<Evaluation, SimFailure> {
    eval_traffic(deployment, params, workload, seed, |source| source)
}

/// [`evaluate`] with the workload's request source changed by `adapt` (another traffic kind).
pub(crate) fn eval_traffic(
    deployment: &Deployment,
    params: &Params,
    workload: &WorkloadSpec,
    seed: u64,
    adapt: impl FnOnce(RequestSource) -> RequestSource,
) -> Result<Evaluation, SimFailure> {
    eval_run(deployment, params, workload, seed, adapt, 0.0)
}

/// [`evaluate`] of a closed loop whose clients send their first requests spread evenly over
/// `spread_s` seconds (client `i` at `i × spread_s / concurrency`) rather than all at once.
pub(crate) fn eval_staggered(
    deployment: &Deployment,
    params: &Params,
    workload: &WorkloadSpec,
    seed: u64,
    spread_s: f64,
) -> Result<Evaluation, SimFailure> {
    eval_run(
        deployment,
        params,
        workload,
        seed,
        |source| source,
        spread_s,
    )
}

fn eval_run(
    deployment: &Deployment,
    params: &Params,
    workload: &WorkloadSpec,
    seed: u64,
    adapt: impl FnOnce(RequestSource) -> RequestSource,
    spread_s: f64,
) -> Result<Evaluation, SimFailure> {
    let (source, load, limits) = requests::from_workload(workload)?;
    let source = adapt(source);
    let engine = SimEngine::start(deployment, params, seed)?;
    let stages = requests::stages(workload).len();
    let collector = Collector::new(true, &workload.slo, false).with_stages(stages);
    let timeout = workload.timeout.as_secs_f64();
    let mut run = Run::new(engine, source, load, limits, timeout, collector);
    if let Load::Closed { concurrency } = load {
        run.issues.clear();
        for i in 0..concurrency {
            let at = spread_s * f64::from(i) / f64::from(concurrency);
            run.issues.push(Reverse(((at * 1e9) as u64, None)));
        }
    }
    run.drive();
    if let Some(why) = run.source.failure() {
        return Err(SimFailure::invalid(why));
    }
    let prefix = run.engine.prefix_counters();
    Ok(Evaluation {
        metrics: run.collector.metrics(),
        stages: run
            .collector
            .stages
            .iter()
            .map(Collector::metrics)
            .collect(),
        prefix_cache_queries: prefix.queries,
        prefix_cache_hits: prefix.hits,
    })
}

/// One run's client side and clock.
struct Run {
    engine: SimEngine,
    source: RequestSource,
    load: Load,
    limits: Limits,
    timeout: f64,
    now: f64,
    tracks: Vec<Track>,
    in_flight: VecDeque<u64>,
    open_in_flight: u32,
    /// Times (ns) at which a client sends its next request, with its stage.
    issues: BinaryHeap<Reverse<(u64, Option<u32>)>>,

    /// Arrival times (and stages) of open-loop requests waiting for the concurrency cap.
    backlog: VecDeque<(f64, Option<u32>)>,
    first_measured_send: Option<f64>,
    events: Vec<Event>,
    /// The instant virtual time 0 stands for in the measured requests' records.
    epoch: Instant,
    collector: Collector,
}

impl Run {
    fn new(
        engine: SimEngine,
        source: RequestSource,
        load: Load,
        limits: Limits,
        timeout: f64,
        collector: Collector,
    ) -> Run {
        let mut run = Run {
            engine,
            source,
            load,
            limits,
            timeout,
            now: 0.0,
            tracks: Vec::new(),
            in_flight: VecDeque::new(),
            open_in_flight: 0,
            issues: BinaryHeap::new(),
            backlog: VecDeque::new(),
            first_measured_send: None,
            events: Vec::new(),
            epoch: Instant::now(),
            collector,
        };
        match load {
            Load::Closed { concurrency } => {
                for _ in 0..concurrency {
                    run.issues.push(Reverse((0, None)));
                }
            }
            Load::Open { .. } => run.next_arrival(),
        }
        run
    }

    /// Schedules the open load's next arrival, if there is one.
    fn next_arrival(&mut self) {
        if let Some(arrival) = self.source.next_arrival() {
            self.issues.push(Reverse(arrival));
        }
    }

    fn drive(&mut self) {
        loop {
            self.issue_due();
            match self.engine.step(&mut self.events) {
                Some(dt) => {
                    self.now += dt;
                    self.deliver();
                    self.expire();
                }
                None => {
                    self.deliver();
                    let Some(Reverse((next, _))) = self.issues.peek() else {
                        break;
                    };
                    self.now = self.now.max(*next as f64 * 1e-9);
                }
            }
        }
    }

    /// Whether the workload may still send a request now.
    fn may_send(&self) -> bool {
        // Arrivals held back by an open loop's concurrency cap will be sent: they count.
        let sent = (self.tracks.len() + self.backlog.len()) as u64;
        let warm = u64::from(self.limits.warmup);
        if let Some(n) = self.limits.requests.map(u64::from) {
            if sent >= warm + n {
                return false;
            }
        }
        match (self.limits.duration, self.first_measured_send) {
            (Some(d), Some(first)) => self.now < first + d,
            _ => true,
        }
    }

    fn issue_due(&mut self) {
        let now_ns = (self.now * 1e9) as u64;
        while let Some(Reverse((t, stage))) = self.issues.peek().copied() {
            if t > now_ns {
                break;
            }
            self.issues.pop();
            if !self.may_send() {
                continue;
            }
            let due = t as f64 * 1e-9;
            match self.load {
                Load::Closed { .. } => self.send(due, self.now, stage),
                Load::Open { cap } => {
                    self.next_arrival();
                    if cap.is_some_and(|c| self.open_in_flight >= c) {
                        self.backlog.push_back((due, stage));
                    } else {
                        // The client sent it on time; the engine sees it at its next step.
                        self.send(due, due, stage);
                    }
                }
            }
        }
    }

    /// Sends the next request (of `stage`), due at `due`, at `at` (not after now).
    fn send(&mut self, due: f64, at: f64, stage: Option<u32>) {
        let id = self.tracks.len() as u64;
        let measured = id >= u64::from(self.limits.warmup);
        if measured && self.first_measured_send.is_none() {
            self.first_measured_send = Some(at);
        }
        let shape = self.source.next_shape();
        let added = self
            .engine
            .add(id, shape.prompt, shape.output, &shape.content);
        self.tracks
            .push(Track::new(shape, measured, due, at, stage));
        self.open_in_flight += 1;
        match added {
            Ok(()) => self.in_flight.push_back(id),
            Err(why) => {
                let at = self.now + REFUSAL_SECONDS;
                self.finish(id, at, Some((ErrorKind::Http, why)));
            }
        }
    }

    /// Hands the step's tokens to the clients, the API server's latency later.
    fn deliver(&mut self) {
        let events = std::mem::take(&mut self.events);
        let seen = self.now + self.engine.config().engine.request_latency_ms * 1e-3;
        for event in &events {
            match *event {
                Event::Token { id, .. } => self.tracks[id as usize].token(seen),
                Event::Finished { id } => self.finish(id, seen, None),
                Event::Rejected { id, ref reason } => {
                    let error = Some((ErrorKind::StreamError, reason.clone()));
                    self.finish(id, seen, error);
                }
            }
        }
        self.events = events;
        self.events.clear();
    }

    /// Client-side timeouts: abort requests older than the timeout (sends are in time order).
    fn expire(&mut self) {
        while let Some(&id) = self.in_flight.front() {
            let t = &self.tracks[id as usize];
            if t.end.is_some() {
                self.in_flight.pop_front();
            } else if self.now - t.send > self.timeout {
                self.in_flight.pop_front();
                self.engine.abort(id);
                let why = format!("no response within {}s", self.timeout);
                self.finish(id, self.now, Some((ErrorKind::Timeout, why)));
            } else {
                break;
            }
        }
    }

    /// Ends request `id` at `at`, failed with `error` (its kind and message) when given; a
    /// measured request goes to the collector.
    fn finish(&mut self, id: u64, at: f64, error: Option<(ErrorKind, String)>) {
        let t = &mut self.tracks[id as usize];
        if t.end.is_some() {
            return;
        }
        match error {
            Some((kind, message)) => t.fail(at, kind, message),
            None => t.complete(),
        }
        if t.measured {
            let index = id - u64::from(self.limits.warmup);
            self.collector.add(&t.take_record(index, self.epoch));
        }
        self.open_in_flight -= 1;
        let at_ns = (at * 1e9) as u64;
        match self.load {
            Load::Closed { .. } => self.issues.push(Reverse((at_ns, None))),
            Load::Open { .. } => {
                if let Some((due, stage)) = self.backlog.pop_front() {
                    self.send(due, self.now, stage);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    // `sim eval` of the traffic users have: trace replay, staged loads, and prefix reuse from the
    // blocks requests really share.

    use super::*;
    use crate::probe::workload::{Stage, StageArrivals, TraceFormat};
    use crate::probe::{DatasetSpec, LoadSpec};
    use crate::record::Value;
    use std::collections::HashSet;
    use std::io::Write;
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    fn h100() -> Deployment {
        Deployment::vllm("H100", "Qwen2.5-7B", 1)
    }

    fn caching(on: bool) -> Params {
        [
            ("enable_prefix_caching".to_string(), Value::Bool(on)),
            ("max_model_len".to_string(), Value::Int(32768)),
        ]
        .into()
    }

    fn trace(path: &Path, format: TraceFormat, duration: Option<Duration>) -> WorkloadSpec {
        let mut w = WorkloadSpec::closed_random(1, 1, 1, 1);
        w.api = crate::probe::Api::Completions;
        w.dataset = DatasetSpec::Trace {
            path: path.to_path_buf(),
            format,
            speed: 1.0,
            start: Duration::ZERO,
            duration,
            requests: None,
            max_context: Some(32768),
            scale: true,
        };
        w.load = LoadSpec::Trace {
            max_concurrency: None,
        };
        w
    }

    #[test]
    fn a_replayed_trace_sends_its_requests_and_shares_its_blocks() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        // Requests 1 and 2 start with request 0's two blocks; request 3 shares nothing.
        let rows = [
            (0, 1100, 10, "[1, 2, 3]"),
            (1000, 1500, 10, "[1, 2, 4]"),
            (2000, 1024, 10, "[1, 2]"),
            (3000, 600, 10, "[5, 6]"),
        ];
        for (ms, input, output, ids) in rows {
            writeln!(
                file,
                "{{\"timestamp\": {ms}, \"input_length\": {input}, \"output_length\": {output}, \
                 \"hash_ids\": {ids}}}"
            )
            .unwrap();
        }
        let w = trace(file.path(), TraceFormat::Mooncake, None);
        let on = evaluate(&h100(), &caching(true), &w, 0).unwrap();
        assert_eq!(on.metrics["completed"], 4.0);
        assert_eq!(on.metrics["total_input_tokens"], 4224.0);
        // Sent at the trace's times: the last request 3 s after the first.
        assert!(on.metrics["duration_s"] > 3.0, "{:?}", on.metrics);
        assert_eq!(on.prefix_cache_queries, 4224);
        // Requests 1 and 2 find the two shared 512-token blocks (request 2 all but its last
        // token's block: 1008 tokens).
        assert_eq!(on.prefix_cache_hits, 1024 + 1008);
        let off = evaluate(&h100(), &caching(false), &w, 0).unwrap();
        assert_eq!(off.prefix_cache_hits, 0);
        assert!(on.metrics["mean_ttft_ms"] < off.metrics["mean_ttft_ms"]);
    }

    #[test]
    fn a_staged_load_reports_each_stage() {
        let mut w = WorkloadSpec::closed_random(200, 20, 1, 1);
        w.load = LoadSpec::Stages {
            stages: vec![
                Stage {
                    rate: 2.0,
                    duration: Duration::from_secs(5),
                },
                Stage {
                    rate: 4.0,
                    duration: Duration::from_secs(5),
                },
            ],
            arrivals: StageArrivals::Constant,
            max_concurrency: None,
        };
        let e = evaluate(&h100(), &Params::new(), &w, 0).unwrap();
        let completed: Vec<f64> = e.stages.iter().map(|s| s["completed"]).collect();
        assert_eq!(completed, [10.0, 20.0]);
        assert_eq!(e.metrics["completed"], 30.0);
        assert!(e.stages[1]["request_throughput"] > 1.5 * e.stages[0]["request_throughput"]);
    }

    #[test]
    fn a_trace_needs_a_trace_load_and_bad_lines_are_located() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        writeln!(file, "{{\"timestamp\": 0, \"input_length\": 10}}").unwrap();
        let w = trace(file.path(), TraceFormat::Jsonl, None);
        let e = evaluate(&h100(), &Params::new(), &w, 0).unwrap_err();
        assert!(e.message.contains(":1:"), "{e}");
        let mut closed = w.clone();
        closed.load = LoadSpec::Closed {
            concurrency: 1,
            requests: Some(1),
            duration: None,
        };
        let e = evaluate(&h100(), &Params::new(), &closed, 0).unwrap_err();
        assert!(e.message.contains("kind: trace"), "{e}");
    }

    /// The prefix reuse the trace's `hash_ids` imply for `rows` (input tokens, block ids): each
    /// request's leading ids seen before, as a share of all prompt tokens.
    fn implied_reuse(rows: &[(u32, Vec<u64>)], block: u32) -> f64 {
        let mut seen = HashSet::new();
        let (mut hit, mut total) = (0u64, 0u64);
        for (input, ids) in rows {
            let leading = ids.iter().take_while(|id| seen.contains(*id)).count() as u32;
            hit += u64::from((leading * block).min(*input));
            total += u64::from(*input);
            seen.extend(ids.iter().copied());
        }
        hit as f64 / total as f64
    }

    #[test]
    fn the_mooncake_slice_reuses_what_its_hash_ids_imply() {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("data/traces/mooncake-conversation-first-10m.jsonl");
        assert!(path.is_file(), "{} is missing", path.display());
        // Two minutes from the fifth, past the trace's cold start.
        let mut w = trace(&path, TraceFormat::Mooncake, Some(Duration::from_secs(120)));
        if let DatasetSpec::Trace { start, .. } = &mut w.dataset {
            *start = Duration::from_secs(300);
        }
        let mut replay = crate::probe::dataset::TraceReplay::new(&w.dataset, w.api).unwrap();
        let block = replay.block_tokens();
        let mut rows = Vec::new();
        while let Some(row) = replay.next_row().unwrap() {
            rows.push((row.input, row.blocks));
        }
        let implied = implied_reuse(&rows, block);
        let e = evaluate(&h100(), &caching(true), &w, 0).unwrap();
        let reused = e.prefix_cache_hits as f64 / e.prefix_cache_queries as f64;
        assert_eq!(e.metrics["completed"], rows.len() as f64);
        // The cache of an H100 holds the whole slice, so the engine finds what the ids imply, less
        // the partial 16-token block at each shared prefix's end and requests admitted while the
        // blocks they share were still being computed.
        assert!(implied > 0.05, "implied reuse {implied}");
        assert!(
            reused <= implied && reused > implied - 0.03,
            "reused {reused:.4}, implied {implied:.4}"
        );
    }
}
