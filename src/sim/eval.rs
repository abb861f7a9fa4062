//! `sim eval`: a workload driven against the simulated engine in virtual time.

use super::config::{Deployment, SimFailure};
use super::core::SimEngine;
use super::requests::{self, Limits, Load, RequestShape, RequestSource};
use super::scheduler::Event;
use super::stats::{self, RequestRecord};
use crate::probe::WorkloadSpec;
use crate::record::{MetricMap, Params};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Virtual seconds a refused request takes to come back (an HTTP 400 round trip).
const REFUSAL_SECONDS: f64 = 0.001;

/// Simulate `workload` against `deployment` configured with `params`; deterministic by `seed`
/// (engine noise) and `workload.seed` (request lengths, arrivals). Returns the probe's metrics,
/// or the failure the engine would have had at start.
pub fn eval(
    deployment: &Deployment,
    params: &Params,
    workload: &WorkloadSpec,
    seed: u64,
) -> Result<MetricMap, SimFailure> {
    let (source, load, limits) = requests::from_workload(workload)?;
    let engine = SimEngine::start(deployment, params, seed)?;
    let mut run = Run::new(engine, source, load, limits, workload.timeout.as_secs_f64());
    run.drive();
    Ok(stats::summarize(&run.records(), run.itl, &workload.slo))
}

struct Track {
    shape: RequestShape,
    measured: bool,
    send: f64,
    first: Option<f64>,
    last: f64,
    tokens: u32,
    end: Option<(f64, bool)>,
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
    /// Times (ns) at which a client sends its next request.
    issues: BinaryHeap<Reverse<u64>>,
    backlog: u32,
    first_measured_send: Option<f64>,
    itl: Vec<f64>,
    events: Vec<Event>,
}

impl Run {
    fn new(
        engine: SimEngine,
        source: RequestSource,
        load: Load,
        limits: Limits,
        timeout: f64,
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
            backlog: 0,
            first_measured_send: None,
            itl: Vec::new(),
            events: Vec::new(),
        };
        match load {
            Load::Closed { concurrency } => {
                for _ in 0..concurrency {
                    run.issues.push(Reverse(0));
                }
            }
            Load::Open { .. } => run.issues.push(Reverse(0)),
        }
        run
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
                    let Some(Reverse(next)) = self.issues.peek() else {
                        break;
                    };
                    self.now = self.now.max(*next as f64 * 1e-9);
                }
            }
        }
    }

    /// Whether the workload may still send a request now.
    fn may_send(&self) -> bool {
        let sent = self.tracks.len() as u64;
        let warm = u64::from(self.limits.warmup);
        if let Some(n) = self.limits.requests {
            if sent >= warm + u64::from(n) {
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
        while let Some(Reverse(t)) = self.issues.peek().copied() {
            if t > now_ns {
                break;
            }
            self.issues.pop();
            if !self.may_send() {
                continue;
            }
            match self.load {
                Load::Closed { .. } => self.send(),
                Load::Open { cap, .. } => {
                    let gap = self.source.next_gap();
                    self.issues.push(Reverse(t + (gap * 1e9) as u64));
                    if cap.is_some_and(|c| self.open_in_flight >= c) {
                        self.backlog += 1;
                    } else {
                        self.send();
                    }
                }
            }
        }
    }

    fn send(&mut self) {
        let id = self.tracks.len() as u64;
        let measured = id >= u64::from(self.limits.warmup);
        if measured && self.first_measured_send.is_none() {
            self.first_measured_send = Some(self.now);
        }
        let shape = self.source.next_shape();
        self.tracks.push(Track {
            shape,
            measured,
            send: self.now,
            first: None,
            last: self.now,
            tokens: 0,
            end: None,
        });
        self.open_in_flight += 1;
        match self
            .engine
            .add(id, shape.prompt, shape.output, shape.prefix)
        {
            Ok(()) => self.in_flight.push_back(id),
            Err(_) => self.finish(id, self.now + REFUSAL_SECONDS, false),
        }
    }

    fn deliver(&mut self) {
        let events = std::mem::take(&mut self.events);
        for event in &events {
            match *event {
                Event::Token { id, first } => {
                    let t = &mut self.tracks[id as usize];
                    if first {
                        t.first = Some(self.now);
                    } else if t.measured {
                        self.itl.push(self.now - t.last);
                    }
                    t.last = self.now;
                    t.tokens += 1;
                }
                Event::Finished { id } => self.finish(id, self.now, true),
                Event::Rejected { id, .. } => self.finish(id, self.now, false),
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
                self.finish(id, self.now, false);
            } else {
                break;
            }
        }
    }

    fn finish(&mut self, id: u64, at: f64, ok: bool) {
        let t = &mut self.tracks[id as usize];
        if t.end.is_some() {
            return;
        }
        t.end = Some((if ok { t.last } else { at }, ok));
        self.open_in_flight -= 1;
        let at_ns = (at * 1e9) as u64;
        match self.load {
            Load::Closed { .. } => self.issues.push(Reverse(at_ns)),
            Load::Open { .. } if self.backlog > 0 => {
                self.backlog -= 1;
                self.send();
            }
            Load::Open { .. } => {}
        }
    }

    fn records(&self) -> Vec<RequestRecord> {
        self.tracks
            .iter()
            .filter(|t| t.measured)
            .filter_map(|t| {
                let (end, ok) = t.end?;
                Some(RequestRecord {
                    ok,
                    prompt: t.shape.prompt,
                    output: t.tokens,
                    send: t.send,
                    first: t.first,
                    end,
                })
            })
            .collect()
    }
}
