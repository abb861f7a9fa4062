//! The probe, watched from the server's side: its `/metrics` scraped before, periodically
//! during and after the probe, the slot's accelerators read meanwhile, and (when asked) the
//! probe stopped early on a server signal. What was seen becomes the record's `server`
//! section and a few metrics an objective or SLO may name.

use crate::exec::backends::TrialObserver;
use crate::exec::prober::Prober;
use crate::probe::server::accel::{Reading, Tool};
use crate::probe::server::exposition::Exposition;
use crate::probe::server::signals;
use crate::probe::server::summary::{summarise, Snapshot};
use crate::probe::{EarlyStop, LiveStats, ProbeReport, RunOptions, Target, WorkloadSpec};
use crate::record::{metric, ServerSignal, ServerStats};
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Metric: the increase of the engine's output-token counter over the whole probe run
/// (warm-up included; compare with `total_output_tokens + warmup_output_tokens`).
pub(crate) const SERVER_OUTPUT_TOKENS: &str = "server_output_tokens";
/// Metric: accelerator energy per output token over the probe run, joules.
pub(crate) const ENERGY_PER_TOKEN: &str = "energy_per_token";
/// Metric: mean accelerator power over the probe run, watts.
pub(crate) const POWER_MEAN_W: &str = "power_mean_w";

/// How a probe is watched.
#[derive(Clone, Debug, Default)]
pub(crate) struct Watch {
    /// The engine's output-token counter, when it names one (checked against the probe).
    pub output_counter: Option<&'static str>,
    /// Time between scrapes during the probe.
    pub every: Duration,
    /// Stop the probe on a server signal.
    pub early_stop: bool,
    /// The server's log, read for fatal errors when stopping early.
    pub log: Option<PathBuf>,
    /// The platform tool and the slot's devices to read power from.
    pub accel: Option<(Tool, Vec<u32>)>,
}

/// What the watcher gathered while the probe ran.
#[derive(Default)]
struct Gathered {
    scrapes: Vec<Snapshot>,
    readings: Vec<Reading>,
    verdict: Option<(ServerSignal, String)>,
    log_offset: u64,
}

type Shared = Arc<Mutex<Gathered>>;

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, Gathered> {
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `workload` with `prober` under `watch`; returns the report (with the server-derived
/// metrics added) and the server section (`None` when nothing could be read). A server that
/// cannot be scraped is one warning to `observer`.
pub(crate) fn probe(
    prober: &dyn Prober,
    observer: &dyn TrialObserver,
    watch: &Watch,
    target: &Target,
    workload: &WorkloadSpec,
    mut options: RunOptions,
) -> anyhow::Result<(ProbeReport, Option<ServerStats>)> {
    let start = Instant::now();
    let scrape = |at: f64| -> anyhow::Result<Snapshot> {
        let text = prober.metrics_text(target)?;
        Ok(Snapshot {
            at,
            exposition: Exposition::parse(&text)?,
        })
    };
    let shared: Shared = Arc::default();
    let scraping = match scrape(0.0) {
        Ok(first) => {
            lock(&shared).scrapes.push(first);
            true
        }
        Err(e) => {
            observer.warning(&format!("cannot read the server's /metrics: {e:#}"));
            false
        }
    };
    if let Some(log) = &watch.log {
        lock(&shared).log_offset = std::fs::metadata(log).map_or(0, |m| m.len());
    }
    if watch.early_stop {
        options.prune = Some(with_server_signals(options.prune.take(), shared.clone()));
    }
    let done = AtomicBool::new(false);
    let report = std::thread::scope(|scope| {
        if scraping || watch.accel.is_some() {
            scope.spawn(|| {
                while pause(watch.every, &done) {
                    let at = start.elapsed().as_secs_f64();
                    let snapshot = scraping.then(|| scrape(at).ok()).flatten();
                    let reading = watch.accel.as_ref().and_then(|(tool, devices)| {
                        let read = tool.read(devices, at);
                        read.map_err(|e| observer.warning(&format!("{e:#}"))).ok()
                    });
                    let mut g = lock(&shared);
                    g.scrapes.extend(snapshot);
                    g.readings.extend(reading);
                    if watch.early_stop && g.verdict.is_none() {
                        g.verdict =
                            signals::judge(g.scrapes.get(1..).unwrap_or_default()).or_else(|| {
                                let log = watch.log.as_ref()?;
                                fatal_in_log(log, &mut g.log_offset)
                            });
                    }
                }
            });
        }
        let report = prober.probe(target, workload, options);
        done.store(true, Ordering::Relaxed);
        report
    });
    let mut report = report?;
    let mut g = lock(&shared);
    if scraping {
        g.scrapes.extend(scrape(start.elapsed().as_secs_f64()).ok());
    }
    if g.scrapes.is_empty() && g.readings.is_empty() {
        return Ok((report, None));
    }
    let mut stats = summarise(&g.scrapes, &g.readings);
    if let (Some(EarlyStop::Pruned(why)), Some((signal, seen))) = (&report.pruned, &g.verdict) {
        if why == seen {
            stats.stopped = Some(*signal);
        }
    }
    add_metrics(&mut report, &stats, &g.scrapes, watch.output_counter);
    Ok((report, Some(stats)))
}

/// Sleep `every` in short steps; false once `done` is raised.
fn pause(every: Duration, done: &AtomicBool) -> bool {
    let until = Instant::now() + every;
    while Instant::now() < until {
        if done.load(Ordering::Relaxed) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20).min(every));
    }
    !done.load(Ordering::Relaxed)
}

/// `inner` (the SLO pruner and the interrupt), then the watcher's server signal.
fn with_server_signals(
    inner: Option<crate::probe::PruneHook>,
    shared: Shared,
) -> crate::probe::PruneHook {
    Arc::new(move |stats: &LiveStats| {
        if let Some(stop) = inner.as_ref().and_then(|hook| hook(stats)) {
            return Some(stop);
        }
        let g = lock(&shared);
        g.verdict
            .as_ref()
            .map(|(_, why)| EarlyStop::Pruned(why.clone()))
    })
}

/// A fatal line written to `log` since `offset` (which moves past what was read).
fn fatal_in_log(log: &std::path::Path, offset: &mut u64) -> Option<(ServerSignal, String)> {
    let mut file = std::fs::File::open(log).ok()?;
    file.seek(SeekFrom::Start(*offset)).ok()?;
    let mut fresh = Vec::new();
    *offset += file.read_to_end(&mut fresh).ok()? as u64;
    let text = String::from_utf8_lossy(&fresh);
    let line = signals::fatal_line(&text)?;
    Some((
        ServerSignal::FatalLog,
        format!("server logged a fatal error: {line}"),
    ))
}

/// The engine's output-token count, energy per output token and mean power as metrics.
fn add_metrics(
    report: &mut ProbeReport,
    stats: &ServerStats,
    scrapes: &[Snapshot],
    counter: Option<&str>,
) {
    let m = &mut report.metrics;
    let counted = counter.filter(|_| scrapes.len() > 1).and_then(|name| {
        let (first, last) = (scrapes.first()?, scrapes.last()?);
        Some(last.exposition.value(name)? - first.exposition.value(name)?)
    });
    if let Some(tokens) = counted {
        m.insert(SERVER_OUTPUT_TOKENS.into(), tokens);
    }
    let probed =
        || Some(m.get(metric::TOTAL_OUTPUT_TOKENS)? + m.get(metric::WARMUP_OUTPUT_TOKENS)?);
    let tokens = stats.output_tokens.or_else(probed);
    if let (Some(energy), Some(tokens)) = (stats.energy_j, tokens) {
        if tokens > 0.0 {
            m.insert(ENERGY_PER_TOKEN.into(), energy / tokens);
        }
    }
    if let Some(power) = stats.power_mean_w {
        m.insert(POWER_MEAN_W.into(), power);
    }
}
