//! One `infertune bench` session: its runs one after another, each summary printed as it ends,
//! then the files asked for (`--csv`, `--json`, and the `--report` folder with each run's JSON and
//! CSV) and, for several runs, one table of them all.

use super::bench_progress::BenchBar;
use crate::probe::csv_out::CsvOut;
use crate::probe::{loadsearch, summary, EarlyStop, ProbeReport, RequestRecord, RunOptions};
use crate::probe::{LoadSpec, Target, WorkloadSpec};
use crate::record::{metric, Slo};
use crate::report::sweep::{self, SweepPoint, SweepView};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::probe::server::exposition::Exposition;
use crate::probe::server::summary::{summarise, Snapshot};

/// Adds what the server counted over the run (its `/metrics` before and after) to `report`:
/// the `server` object of its JSON, and `server_prefix_cache_hit_rate` next to the trace's
/// `implied_prefix_reuse` where both exist.
fn add_server(report: &mut ProbeReport, scrapes: &[Snapshot]) {
    let stats = summarise(scrapes, &[]);
    if let Some(rate) = stats.prefix_cache_hit_rate {
        report
            .metrics
            .insert("server_prefix_cache_hit_rate".into(), rate);
    }
    let implied = report.json["trace_replay"]["implied_prefix_reuse"].as_f64();
    if let Some(implied) = implied {
        report
            .metrics
            .insert("implied_prefix_reuse".into(), implied);
    }
    if let Ok(value) = serde_json::to_value(&stats) {
        report.json["server"] = value;
    }
}

/// Folder of the report holding each run's JSON and CSV.
const RUNS_DIR: &str = "runs";

/// Where a session writes.
pub(crate) struct Outputs {
    /// `--json`: every run's report.
    pub json: Option<PathBuf>,
    /// `--csv`: every request of every run.
    pub csv: Option<PathBuf>,
    /// `--report`: the sweep's folder.
    pub report: Option<PathBuf>,
}

/// One finished run.
pub struct Run {
    /// The concurrency or rate it ran at.
    pub load: f64,
    /// Its report.
    pub report: ProbeReport,
    /// The SLOs it broke, as text.
    pub violations: Vec<String>,
}

/// Runs workloads against one target and keeps what they found.
pub(crate) struct Session {
    target: Target,
    runtime: tokio::runtime::Runtime,
    interrupted: Arc<AtomicBool>,
    options: RunOptions,
    bar: Arc<BenchBar>,
    outputs: Outputs,
    csv: Option<CsvOut>,
    runs: Vec<Run>,
}

impl Session {
    /// Starts the runtime, the Ctrl-C watch and the files that grow run by run.
    pub fn start(target: Target, outputs: Outputs, bar: BenchBar) -> Result<Session> {
        let csv = outputs.csv.as_deref().map(CsvOut::create).transpose()?;
        if let Some(dir) = &outputs.report {
            let runs = dir.join(RUNS_DIR);
            std::fs::create_dir_all(&runs)
                .with_context(|| format!("cannot create {}", runs.display()))?;
        }
        let runtime = crate::probe::runtime().context("starting the async runtime")?;
        let interrupted = Arc::new(AtomicBool::new(false));
        let flag = interrupted.clone();
        runtime.spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                flag.store(true, Ordering::SeqCst);
            }
        });
        let hook_flag = interrupted.clone();
        let bar = Arc::new(bar);
        let options = RunOptions {
            progress: Some(bar.clone()),
            prune: Some(Arc::new(move |_| {
                hook_flag
                    .load(Ordering::SeqCst)
                    .then(|| EarlyStop::Pruned("interrupted (Ctrl-C); partial results".to_string()))
            })),
        };
        Ok(Session {
            target,
            runtime,
            interrupted,
            options,
            bar,
            outputs,
            csv,
            runs: Vec::new(),
        })
    }

    /// The target's `/metrics` now; `None` when it serves none.
    fn scrape(&self) -> Option<Snapshot> {
        let started = Instant::now();
        let text = self
            .runtime
            .block_on(crate::probe::server::metrics_text(&self.target))
            .ok()?;
        Some(Snapshot {
            at: started.elapsed().as_secs_f64(),
            exposition: Exposition::parse(&text).ok()?,
        })
    }

    /// `name`'s value in every run so far that measured it.
    pub fn figures(&self, name: &str) -> Vec<f64> {
        self.runs
            .iter()
            .filter_map(|r| r.report.metrics.get(name).copied())
            .collect()
    }

    /// Whether Ctrl-C was pressed; the session then makes no more runs.
    pub fn interrupted(&self) -> bool {
        self.interrupted.load(Ordering::SeqCst)
    }

    /// True for `--json -`.
    fn json_on_stdout(&self) -> bool {
        self.outputs.json.as_deref() == Some(Path::new(STDOUT))
    }

    /// Runs `workload`, prints its summary and writes its files.
    pub fn run(&mut self, workload: &WorkloadSpec) -> Result<&Run> {
        let (label, load) = describe(&workload.load);
        self.bar.begin_run(&label);
        let mut run_csv = match &self.outputs.report {
            Some(dir) => Some(CsvOut::create(&run_path(dir, &label, "csv"))?),
            None => None,
        };
        let before = self.scrape();
        let epoch = Instant::now();
        let csv = &mut self.csv;
        let mut on_record = |record: &RequestRecord| {
            for out in [&mut *csv, &mut run_csv].into_iter().flatten() {
                out.row(&label, epoch, record);
            }
        };
        let mut report = self.runtime.block_on(crate::probe::run_with_records(
            &self.target,
            workload,
            self.options.clone(),
            &mut on_record,
        ))?;
        if let (Some(before), Some(after)) = (before, self.scrape()) {
            add_server(&mut report, &[before, after]);
        }
        let text = summary::render(&report, &label);
        if self.json_on_stdout() {
            eprint!("{text}");
        } else {
            print!("{text}");
        }
        if let Some(dir) = &self.outputs.report {
            write_json(&run_path(dir, &label, "json"), &report.json)?;
        }
        if let Some(out) = run_csv {
            out.finish()?;
        }
        let violations = loadsearch::violations(&workload.slo, &report.metrics)
            .iter()
            .map(ToString::to_string)
            .collect();
        self.runs.push(Run {
            load,
            report,
            violations,
        });
        Ok(self.runs.last().expect("just pushed"))
    }

    /// Writes `--csv`, `--json` and the report (its knob named `knob`, with the `knee` when a
    /// search found one), prints the table of several runs, and returns the exit status:
    /// non-zero only when every request failed.
    pub fn finish(self, knob: &str, slos: &[Slo], knee: Option<f64>) -> Result<i32> {
        let to_stdout = self.json_on_stdout();
        if let Some(csv) = self.csv {
            csv.finish()?;
        }
        if let Some(path) = &self.outputs.json {
            let value = match self.runs.as_slice() {
                [one] => one.report.json.clone(),
                many => many.iter().map(|r| r.report.json.clone()).collect(),
            };
            write_json(path, &value)?;
        }
        let points: Vec<SweepPoint> = self
            .runs
            .iter()
            .map(|r| SweepPoint {
                load: r.load,
                metrics: r.report.metrics.clone(),
                violations: r.violations.clone(),
            })
            .collect();
        let view = SweepView {
            title: format!(
                "infertune bench: {} at {}",
                self.target.model, self.target.base_url
            ),
            knob,
            points: &points,
            slos,
            knee,
        };
        let mut lines = Vec::new();
        if points.len() > 1 {
            lines.push(table(&view).to_string());
        }
        if let Some(dir) = &self.outputs.report {
            let html = sweep::write(dir, &view)?;
            lines.push(format!("Report: {}", html.display()));
        }
        for line in lines {
            if to_stdout {
                eprintln!("{line}");
            } else {
                println!("{line}");
            }
        }
        let total = |key: &str| {
            self.runs
                .iter()
                .map(|r| r.report.metrics.get(key).copied().unwrap_or(0.0))
                .sum::<f64>()
        };
        Ok(i32::from(
            total(metric::COMPLETED) == 0.0 && total(metric::FAILED) > 0.0,
        ))
    }
}

/// A load's label (`concurrency 8`, `rate 2.5/s`) and value.
pub(crate) fn describe(load: &LoadSpec) -> (String, f64) {
    match load {
        LoadSpec::Closed { concurrency, .. } => (
            format!("concurrency {concurrency}"),
            f64::from(*concurrency),
        ),
        LoadSpec::Open { rate, .. } => (format!("rate {rate}/s"), *rate),
        LoadSpec::Trace { .. } => ("trace replay".into(), 1.0),
        LoadSpec::Stages { stages, .. } => (format!("{} stages", stages.len()), 1.0),
    }
}

/// `DIR/runs/concurrency-8.EXT` for the run labelled `concurrency 8`.
fn run_path(dir: &Path, label: &str, ext: &str) -> PathBuf {
    let stem = label.trim_end_matches("/s").replace(' ', "-");
    dir.join(RUNS_DIR).join(format!("{stem}.{ext}"))
}

/// The sweep's table for the terminal.
fn table(view: &SweepView<'_>) -> comfy_table::Table {
    let (header, rows) = sweep::table(view, true);
    let mut table = comfy_table::Table::new();
    table
        .load_preset(comfy_table::presets::UTF8_FULL_CONDENSED)
        .set_header(header);
    for row in rows {
        table.add_row(row);
    }
    table
}

/// `--json -`: the JSON goes to stdout, and the text that would go there to stderr.
const STDOUT: &str = "-";

/// Write `value` to `path`, or print it on stdout for [`STDOUT`].
fn write_json(path: &Path, value: &serde_json::Value) -> Result<()> {
    let text = serde_json::to_string_pretty(value).context("serialising the report")?;
    if path == Path::new(STDOUT) {
        println!("{text}");
        return Ok(());
    }
    std::fs::write(path, text + "\n").with_context(|| format!("cannot write {}", path.display()))
}
