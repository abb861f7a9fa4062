//! Load shapes: closed loop (fixed workers), open loop (scheduled arrivals) and trace replay
//! (each request at its trace time).

use super::conn::Conn;
use super::dataset::{PlannedRequest, RequestStream};
use super::exchange::{Exchange, Outgoing};
use super::record::RequestRecord;
use super::workload::{Stage, StageArrivals};
use anyhow::{Context, Result};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp1, Gamma};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc::UnboundedSender, Semaphore};
use tokio::task::JoinSet;

/// What load tasks report to the run.
pub(crate) enum Message {
    /// A finished request.
    Record(RequestRecord),
    /// The dataset could not produce the next request.
    Fatal(anyhow::Error),
}

/// How requests are issued in one phase.
#[derive(Clone, Debug)]
pub(crate) enum Shape {
    /// `concurrency` workers, each sending its next request when the last one ends.
    Closed { concurrency: u32 },
    /// Arrivals at gamma-distributed gaps (Poisson when `burstiness` = 1).
    Open {
        rate: f64,
        burstiness: f64,
        max_concurrency: Option<u32>,
        seed: u64,
    },
    /// Each request at its replayed trace's time.
    Trace { max_concurrency: Option<u32> },
    /// Open-loop stages one after another.
    Stages {
        stages: Arc<[Stage]>,
        arrivals: StageArrivals,
        max_concurrency: Option<u32>,
        seed: u64,
    },
}

/// When an open dispatcher sends its next request.
enum Schedule {
    /// Gaps drawn after each arrival.
    Gaps(Arrivals),
    /// Stages one after another.
    Stages(StageClock),
    /// At the times the feed gives (trace replay).
    Feed,
}

enum Requests {
    Prebuilt(VecDeque<PlannedRequest>),
    Lazy(Box<RequestStream>),
}

/// The requests of one phase, handed out in order.
pub(crate) struct Feed {
    requests: Mutex<(Requests, u64)>,
    model: String,
    stop_at: Mutex<Option<Instant>>,
    duration: Option<Duration>,
    /// When the phase started, and the trace time of its first request: a replayed request
    /// is due at `origin + (at − first_at)`.
    origin: Mutex<(Instant, Option<Duration>)>,
}

impl Feed {
    /// Exactly these requests.
    pub(crate) fn prebuilt(requests: Vec<PlannedRequest>, model: &str) -> Self {
        Self::new(Requests::Prebuilt(requests.into()), model, None)
    }

    /// Requests drawn from `stream` until it ends or `duration` has passed since
    /// [`Feed::start`].
    pub fn lazy(stream: RequestStream, model: &str, duration: Option<Duration>) -> Self {
        Self::new(Requests::Lazy(Box::new(stream)), model, duration)
    }

    /// Also stop issuing `duration` after [`Feed::start`].
    pub(crate) fn with_duration(mut self, duration: Duration) -> Self {
        self.duration = Some(duration);
        self
    }

    fn new(requests: Requests, model: &str, duration: Option<Duration>) -> Self {
        Feed {
            requests: Mutex::new((requests, 0)),
            model: model.to_string(),
            stop_at: Mutex::new(None),
            duration,
            origin: Mutex::new((Instant::now(), None)),
        }
    }

    /// Starts the clock of the phase.
    pub fn start(&self, now: Instant) {
        *self.stop_at.lock().expect("feed lock") = self.duration.map(|d| now + d);
        self.origin.lock().expect("feed lock").0 = now;
    }

    /// The request due at `scheduled` (a replayed request: at its trace time), or `None` when
    /// the phase is over.
    pub fn next(&self, scheduled: Instant) -> Result<Option<Outgoing>> {
        if self
            .stop_at
            .lock()
            .expect("feed lock")
            .is_some_and(|stop| scheduled >= stop)
        {
            return Ok(None);
        }
        let mut guard = self.requests.lock().expect("feed lock");
        let (requests, issued) = &mut *guard;
        let planned = match requests {
            Requests::Prebuilt(queue) => match queue.pop_front() {
                Some(planned) => planned,
                None => return Ok(None),
            },
            Requests::Lazy(stream) => match stream.next().context("building the next request")? {
                Some(planned) => planned,
                None => return Ok(None),
            },
        };
        let index = *issued;
        *issued += 1;
        let scheduled = match planned.at {
            Some(at) => {
                let mut origin = self.origin.lock().expect("feed lock");
                let first = *origin.1.get_or_insert(at);
                origin.0 + at.saturating_sub(first)
            }
            None => scheduled,
        };
        Ok(Some(Outgoing {
            index,
            body: planned.body_with_model(&self.model),
            input_tokens: planned.input_tokens,
            scheduled,
            replayed_output: planned.at.map(|_| planned.max_tokens),
            stage: None,
        }))
    }
}

/// Idle keep-alive connections, shared by the phases of a run (warmup opens them).
pub(crate) type Pool = Arc<Mutex<Vec<Conn>>>;

/// Starts the tasks of one phase in `tasks`; they report on `tx` and end with the feed.
pub(crate) fn spawn(
    shape: Shape,
    feed: Arc<Feed>,
    exchange: Arc<Exchange>,
    pool: Pool,
    tx: UnboundedSender<Message>,
    tasks: &mut JoinSet<()>,
) {
    feed.start(Instant::now());
    match shape {
        Shape::Closed { concurrency } => {
            for _ in 0..concurrency {
                let worker =
                    closed_worker(feed.clone(), exchange.clone(), pool.clone(), tx.clone());
                tasks.spawn(worker);
            }
        }
        Shape::Open {
            rate,
            burstiness,
            max_concurrency,
            seed,
        } => {
            tasks.spawn(open_dispatcher(
                Schedule::Gaps(Arrivals::new(rate, burstiness, seed)),
                max_concurrency,
                feed,
                exchange,
                pool,
                tx,
            ));
        }
        Shape::Trace { max_concurrency } => {
            tasks.spawn(open_dispatcher(
                Schedule::Feed,
                max_concurrency,
                feed,
                exchange,
                pool,
                tx,
            ));
        }
        Shape::Stages {
            stages,
            arrivals,
            max_concurrency,
            seed,
        } => {
            let clock = StageClock::new(stages, arrivals, seed);
            tasks.spawn(open_dispatcher(
                Schedule::Stages(clock),
                max_concurrency,
                feed,
                exchange,
                pool,
                tx,
            ));
        }
    }
}

async fn closed_worker(
    feed: Arc<Feed>,
    exchange: Arc<Exchange>,
    pool: Pool,
    tx: UnboundedSender<Message>,
) {
    let mut conn = take_idle(&pool);
    loop {
        let request = match feed.next(Instant::now()) {
            Ok(Some(request)) => request,
            Ok(None) => break,
            Err(e) => {
                let _ = tx.send(Message::Fatal(e));
                break;
            }
        };
        let record = exchange.execute(&mut conn, request).await;
        if tx.send(Message::Record(record)).is_err() {
            break;
        }
    }
    give_back(&pool, conn);
}

fn take_idle(pool: &Pool) -> Option<Conn> {
    pool.lock().expect("pool lock").pop()
}

fn give_back(pool: &Pool, conn: Option<Conn>) {
    if let Some(conn) = conn.filter(Conn::reusable) {
        pool.lock().expect("pool lock").push(conn);
    }
}

/// Sends each request at its scheduled time.
async fn open_dispatcher(
    mut schedule: Schedule,
    max_concurrency: Option<u32>,
    feed: Arc<Feed>,
    exchange: Arc<Exchange>,
    pool: Pool,
    tx: UnboundedSender<Message>,
) {
    let limit = max_concurrency.map(|n| Arc::new(Semaphore::new(n as usize)));
    let mut requests = JoinSet::new();
    let start = Instant::now();
    let mut due = start;
    let mut stage = None;
    loop {
        if let Schedule::Stages(clock) = &mut schedule {
            let Some((at, index)) = clock.next() else {
                break;
            };
            (due, stage) = (start + at, Some(index));
        }
        let request = match feed.next(due) {
            Ok(Some(request)) => Outgoing { stage, ..request },
            Ok(None) => break,
            Err(e) => {
                let _ = tx.send(Message::Fatal(e));
                break;
            }
        };
        wait_until(request.scheduled).await;
        let permit = match &limit {
            Some(semaphore) => semaphore.clone().acquire_owned().await.ok(),
            None => None,
        };
        let (pool, exchange, tx) = (pool.clone(), exchange.clone(), tx.clone());
        requests.spawn(async move {
            let mut conn = take_idle(&pool);
            let record = exchange.execute(&mut conn, request).await;
            give_back(&pool, conn);
            drop(permit);
            let _ = tx.send(Message::Record(record));
        });
        // Let the request be written before the next body is built.
        tokio::task::yield_now().await;
        while requests.try_join_next().is_some() {}
        if let Schedule::Gaps(arrivals) = &mut schedule {
            due += arrivals.next_gap();
        }
    }
    while requests.join_next().await.is_some() {}
}

/// The timer wakes up to a millisecond late; its last stretch is spent yielding instead.
const SPIN: Duration = Duration::from_micros(1500);

/// Returns at `at`, give or take the time other tasks hold the thread.
async fn wait_until(at: Instant) {
    if let Some(early) = at.checked_sub(SPIN) {
        tokio::time::sleep_until(early.into()).await;
    }
    while Instant::now() < at {
        tokio::task::yield_now().await;
    }
}

/// The arrival times of a staged load: offsets from its start, each with its stage.
pub(crate) struct StageClock {
    stages: Arc<[Stage]>,
    poisson: Option<(Exp1, ChaCha8Rng)>,
    stage: usize,
    stage_start: f64,
    next: f64,
}

impl StageClock {
    /// The clock of `stages` (checked by the workload).
    pub fn new(stages: Arc<[Stage]>, arrivals: StageArrivals, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(1);
        StageClock {
            stages,
            poisson: (arrivals == StageArrivals::Poisson).then_some((Exp1, rng)),
            stage: 0,
            stage_start: 0.0,
            next: 0.0,
        }
    }

    /// The next arrival's offset and stage; `None` after the last stage.
    pub(crate) fn next(&mut self) -> Option<(Duration, u32)> {
        loop {
            let stage = self.stages.get(self.stage)?;
            let end = self.stage_start + stage.duration.as_secs_f64();
            // A nanosecond's slack: summed gaps of 1/rate must not add an arrival at `end`.
            if self.next < end - 1e-9 {
                let at = self.next;
                let unit: f64 = match &mut self.poisson {
                    Some((exp, rng)) => exp.sample(rng),
                    None => 1.0,
                };
                self.next += unit / stage.rate;
                return Some((Duration::from_secs_f64(at), self.stage as u32));
            }
            self.stage += 1;
            self.stage_start = end;
            self.next = end;
        }
    }
}

/// Seeded inter-arrival gaps: gamma with shape `burstiness` and mean `1/rate`.
pub(crate) struct Arrivals {
    gamma: Gamma<f64>,
    rng: ChaCha8Rng,
}

impl Arrivals {
    /// Gaps for `rate` requests per second (both arguments checked by the workload).
    pub fn new(rate: f64, burstiness: f64, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(1);
        Arrivals {
            gamma: Gamma::new(burstiness, 1.0 / (rate * burstiness)).expect("checked positive"),
            rng,
        }
    }

    /// The next gap.
    pub(crate) fn next_gap(&mut self) -> Duration {
        Duration::from_secs_f64(self.gamma.sample(&mut self.rng).min(3600.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_follow_one_another_at_their_rates() {
        let stages: Arc<[Stage]> = vec![
            Stage {
                rate: 2.0,
                duration: Duration::from_secs(3),
            },
            Stage {
                rate: 10.0,
                duration: Duration::from_secs(1),
            },
        ]
        .into();
        let mut clock = StageClock::new(stages.clone(), StageArrivals::Constant, 0);
        let arrivals: Vec<(f64, u32)> = std::iter::from_fn(|| clock.next())
            .map(|(at, stage)| (at.as_secs_f64(), stage))
            .collect();
        assert_eq!(arrivals.iter().filter(|a| a.1 == 0).count(), 6);
        assert_eq!(arrivals.iter().filter(|a| a.1 == 1).count(), 10);
        assert!((arrivals[6].0 - 3.0).abs() < 1e-9 && (arrivals[7].0 - 3.1).abs() < 1e-9);
        let long: Arc<[Stage]> = vec![Stage {
            rate: 50.0,
            duration: Duration::from_secs(400),
        }]
        .into();
        let mut poisson = StageClock::new(long, StageArrivals::Poisson, 3);
        let n = std::iter::from_fn(|| poisson.next()).count() as f64;
        assert!(
            (n - 20_000.0).abs() < 600.0,
            "{n} arrivals, expected about 20000"
        );
    }

    #[test]
    fn gaps_have_the_requested_mean_and_are_seeded() {
        let mut a = Arrivals::new(50.0, 1.0, 7);
        let gaps: Vec<f64> = (0..20_000).map(|_| a.next_gap().as_secs_f64()).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        assert!((mean - 0.02).abs() < 0.001, "mean gap {mean}");
        let mut b = Arrivals::new(50.0, 1.0, 7);
        assert_eq!(b.next_gap().as_secs_f64(), gaps[0]);
        let mut bursty = Arrivals::new(50.0, 0.25, 7);
        let gaps: Vec<f64> = (0..20_000)
            .map(|_| bursty.next_gap().as_secs_f64())
            .collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        assert!((mean - 0.02).abs() < 0.002, "mean gap {mean}");
        // Gamma variance = mean² / shape: four times Poisson's at shape 0.25.
        assert!(var > 2.5 * 0.02 * 0.02, "variance {var}");
    }
}
