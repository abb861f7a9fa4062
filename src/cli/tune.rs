//! `infertune tune`: runs (or resumes) a study and prints its winner.

use super::tune_events::TuneEvents;
use super::tune_progress::TuneProgress;
use crate::exec::interrupt::{self, StopFlag};
use crate::exec::{Backends, HttpProber};
use crate::export::{
    gain_text, gain_verdict, mean_text, resolution_text, tied_text, BEST_SH, TRIALS_CSV,
};
use crate::launch::ProcessLauncher;
use crate::sampler::{self, SAMPLER_ALIASES, SAMPLER_NAMES};
use crate::space::error::Pos;
use crate::space::executor::ExecutorKind;
use crate::space::{StudySpec, WarmStartEntry};
use crate::study::observer::StudyObserver;
use crate::study::plan::StopReason;
use crate::study::{StudyOptions, StudyResult};
use clap::builder::{PossibleValue, PossibleValuesParser};
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Exit status of a study stopped by Ctrl-C or SIGTERM (resumable).
const EXIT_INTERRUPTED: i32 = 130;
/// Exit status of a study in which no config met every SLO.
const EXIT_NO_WINNER: i32 = 1;
/// Exit status of a study that could not run (bad space, I/O, engine setup).
const EXIT_ERROR: i32 = 2;

/// Arguments of `infertune tune`.
#[derive(clap::Args, Debug)]
pub(crate) struct TuneArgs {
    /// Search space file (YAML).
    #[arg(long)]
    pub space: PathBuf,
    /// Study name (folder under --results); defaults to the space's name.
    #[arg(long)]
    pub study: Option<String>,
    /// Number of search trials, baseline included (overrides `search.trials`); at least 1.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub trials: Option<u32>,
    /// Wall-clock budget, e.g. `8h` or `90m` (overrides `search.budget`).
    #[arg(long, value_parser = humantime::parse_duration)]
    pub budget: Option<Duration>,
    /// Continue the study in the study folder, which must hold one (completed trials are kept,
    /// never rerun). Without it, the same study is continued too, and a new one is started
    /// where the folder holds none.
    #[arg(long)]
    pub resume: bool,
    /// Sampler (overrides `search.sampler`).
    #[arg(long, ignore_case = true, value_parser = sampler_names())]
    pub sampler: Option<String>,
    /// Sampler seed (overrides `search.seed`).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Folder holding study folders.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// Run every probe to the end, even once an SLO is certainly broken.
    #[arg(long)]
    pub no_prune: bool,
    /// Run every probe to the end even when the server thrashes (preemptions climbing while
    /// its queue grows), keeps its KV cache full or logs a fatal error.
    #[arg(long)]
    pub no_server_stop: bool,
    /// An earlier study folder of the same engine whose trials seed the sampler (repeatable;
    /// added to `search.warm_start`, relative to the current folder).
    #[arg(long, value_name = "DIR")]
    pub warm_start: Vec<PathBuf>,
    /// Trials in flight at once, each on its own accelerators and ports (overrides
    /// `search.parallel`); at least 1.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub parallel: Option<u32>,
    /// Where trials run: `local` (this host's slots) or `slurm` (one Slurm job per trial, with
    /// the space's `executor:` settings; the study folder must be on a filesystem the nodes
    /// share). Overrides `executor.kind`.
    #[arg(long, value_enum)]
    pub executor: Option<ExecutorArg>,
    /// Print the study's result as one JSON object on stdout (schema:
    /// docs/machine-interface.md) instead of the text summary.
    #[arg(long)]
    pub json: bool,
    /// Stream the study as events on stdout, one JSON object a line (`jsonl`; schema:
    /// docs/machine-interface.md), ending with a `result` event; no progress bar.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub events: Option<EventsArg>,
}

/// `--events` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum EventsArg {
    /// One JSON object a line.
    Jsonl,
}

/// `--executor` values.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub(crate) enum ExecutorArg {
    /// This host's slots.
    Local,
    /// One Slurm job per trial.
    Slurm,
}

/// Runs `infertune tune`; with `--json` or `--events`, an error is a JSON result too.
pub fn run(args: TuneArgs) -> anyhow::Result<i32> {
    let events = args.events.map(|_| Arc::new(TuneEvents::default()));
    let machine = args.json || events.is_some();
    let observer: Arc<dyn StudyObserver + Send> = match &events {
        Some(events) => Arc::clone(events) as Arc<dyn StudyObserver + Send>,
        None => Arc::new(TuneProgress::default()),
    };
    let outcome = study(&args, &observer, machine);
    if !machine {
        return outcome.map(|(code, _)| code);
    }
    let (code, mut result) = outcome.unwrap_or_else(|e| {
        let error = json!({"exit_code": EXIT_ERROR, "status": "error", "error": format!("{e:#}")});
        (EXIT_ERROR, error)
    });
    match &events {
        Some(events) => {
            result["event"] = json!("result");
            events.emit(result);
        }
        None => println!("{}", serde_json::to_string_pretty(&result)?),
    }
    Ok(code)
}

/// Run the study of `args`, reporting to `observer`; its exit status and its result as JSON
/// (the text summary is printed unless `machine`).
fn study(
    args: &TuneArgs,
    observer: &Arc<dyn StudyObserver + Send>,
    machine: bool,
) -> anyhow::Result<(i32, serde_json::Value)> {
    let (mut space, notes) = StudySpec::load_for_host(&args.space, crate::engine::rule_pack)?;
    for note in notes {
        observer.note(&note);
    }
    apply_overrides(&mut space, args);
    let flags = super::startup::flags(&mut space)?;
    observer.note(&format!(
        "flag catalogue: {}",
        flags.describe(space.engine.kind)
    ));
    if let Some(notice) = flags.notice() {
        observer.warning(notice);
    }
    let name = args.study.clone().unwrap_or_else(|| space.name.clone());
    let dir = args.results.join(&name);
    let stop = interrupt::on_stop_signal()?;
    let engine = crate::engine::for_kind(space.engine.kind);
    let mut warm = crate::study::warm::load(&space, &dir)?;
    let twin_first = twin_prior(&space, &mut warm.prior, observer.as_ref())?;
    for s in &warm.studies {
        observer.note(&format!(
            "warm start from {}: {} trial(s) reused, {} dropped (other parameters), {} \
             start-up failure(s) carried over, weight {}",
            s.study, s.reused, s.dropped, s.failures, s.weight
        ));
    }
    let mut sampler =
        sampler::from_name_with_prior(&space.search.sampler, space.search.seed, warm.prior)?;
    let prober = HttpProber::new()?;
    let launcher = process_launcher(&stop, observer);
    let backends: Backends<'_, dyn StudyObserver> = Backends {
        check: &space,
        engine,
        launcher: &launcher,
        prober: &prober,
        observer: observer.as_ref(),
    };
    let options = StudyOptions {
        dir: dir.clone(),
        resume: args.resume,
        prune: !args.no_prune,
        server_stop: !args.no_server_stop,
        stop,
        warm_start: warm.studies,
        twin_first,
    };
    if let Some(warning) = space.rules_warning() {
        observer.warning(&warning);
    }
    let result = crate::study::run(&space, sampler.as_mut(), backends, &options);
    // A study that fails ends without `finished`: clear the bar before the error is printed.
    observer.finished();
    let result = result?;
    let summary = result_json(&space, &name, &dir, &result);
    let code = summary["exit_code"]
        .as_i64()
        .map_or(EXIT_ERROR, |c| c as i32);
    if machine {
        return Ok((code, summary));
    }
    print_outcome(&space, &dir, &result)?;
    if result.earlier > 0
        && result.records.len() == result.earlier
        && result.stopped != StopReason::Interrupted
    {
        println!(
            "the study in {0} was already complete, so nothing ran: the result above is the one \
             it found. Start a fresh study with --study NEW-NAME (or remove {0}), or raise \
             --trials to extend this one",
            dir.display()
        );
    }
    Ok((code, summary))
}

/// With `search.prior: twin` (or unset, where the twin applies), the twin's view of `space`: its
/// evaluations join the sampler's prior and its best configs are returned to run first.
fn twin_prior(
    space: &StudySpec,
    prior: &mut crate::sampler::Prior,
    observer: &dyn StudyObserver,
) -> anyhow::Result<Vec<crate::record::Params>> {
    use crate::prior::twin::{self, NoTwin};
    let objective = crate::exec::objective(space)?;
    let started = std::time::Instant::now();
    let view = match twin::view(
        space,
        space,
        &objective,
        crate::sim::CardScale::default(),
        space.search.seed,
    ) {
        Ok(view) => view,
        Err(NoTwin::Off) => return Ok(Vec::new()),
        Err(e) if space.search.prior == crate::space::Prior::Default => {
            observer.note(&format!("twin prior: not by default here: {e}"));
            return Ok(Vec::new());
        }
        Err(e) => anyhow::bail!("{}: search.prior: twin cannot apply: {e}", space.origin),
    };
    let feasible = view.predicted_feasible();
    observer.note(&format!(
        "twin prior: {} configs evaluated in {:.1} s ({feasible} predicted feasible); {} of its \
         best run after the baseline{}",
        view.trials.len(),
        started.elapsed().as_secs_f64(),
        view.first.len(),
        if view.unmodelled.is_empty() {
            String::new()
        } else {
            format!("; not modelled: {}", view.unmodelled.join(", "))
        }
    ));
    if sampler::learns_from_prior(&space.search.sampler) {
        prior.refresh = Some(twin::refresher(
            space,
            prior.trials.clone(),
            space.search.seed,
        ));
        prior.trials.extend(view.trials);
    }
    Ok(view.first)
}

/// The result of a study as `--json` prints it (docs/machine-interface.md).
fn result_json(
    space: &StudySpec,
    name: &str,
    dir: &std::path::Path,
    result: &StudyResult,
) -> serde_json::Value {
    let (code, status) = match (&result.winner, result.stopped == StopReason::Interrupted) {
        (_, true) => (EXIT_INTERRUPTED, "interrupted"),
        (Some(_), false) => (0, "winner"),
        (None, false) => (EXIT_NO_WINNER, "no_feasible_config"),
    };
    let summary = |s: &crate::score::select::ConfigSummary| {
        json!({"trial": s.number, "params": s.params, "mean": s.mean, "ci95": s.ci95,
               "runs": s.runs, "values": s.values})
    };
    let winner = result
        .winner
        .as_ref()
        .filter(|_| result.stopped != StopReason::Interrupted);
    let files: serde_json::Map<String, serde_json::Value> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().is_file() && !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name, json!(e.path()))
        })
        .collect();
    json!({
        "exit_code": code,
        "status": status,
        "study": name,
        "dir": dir,
        "objective": {"direction": space.objective.direction, "metric": space.objective.metric},
        "trials": result.records.len(),
        "ran_now": result.records.len() - result.earlier,
        "winner": winner.map(|w| summary(&w.summary)),
        "baseline": winner.and_then(|w| w.baseline.as_ref()).map(summary),
        "gain_pct": winner.and_then(|w| w.gain_pct),
        "gain_ci95": winner.and_then(|w| w.gain_ci95),
        "files": files,
    })
}

/// The process launcher, abandoning a start in progress once `stop` is raised (Ctrl-C), its
/// warnings shown by `progress`.
fn process_launcher(stop: &StopFlag, progress: &Arc<dyn StudyObserver + Send>) -> ProcessLauncher {
    let progress = Arc::clone(progress);
    let launcher = ProcessLauncher::new(crate::engine::log_patterns())
        .on_warning(move |text| progress.warning(text));
    let cancel = launcher.cancel_flag();
    let stop = stop.clone();
    std::thread::spawn(move || {
        while !stop.is_raised() {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        cancel.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    launcher
}

/// The sampler names with what each does, for `--help` and for refusing unknown ones.
fn sampler_names() -> PossibleValuesParser {
    PossibleValuesParser::new(SAMPLER_NAMES.map(|name| {
        let aliases = SAMPLER_ALIASES
            .iter()
            .filter(|(_, named)| *named == name)
            .map(|(alias, _)| *alias);
        PossibleValue::new(name)
            .help(sampler::about(name))
            .aliases(aliases)
    }))
}

fn apply_overrides(space: &mut StudySpec, args: &TuneArgs) {
    let s = &mut space.search;
    if let Some(t) = args.trials {
        s.trials = t;
    }
    if let Some(b) = args.budget {
        s.budget = Some(b);
    }
    if let Some(name) = &args.sampler {
        s.sampler = name.clone();
    }
    if let Some(seed) = args.seed {
        s.seed = seed;
    }
    if let Some(parallel) = args.parallel {
        s.parallel = parallel;
    }
    if let Some(kind) = args.executor {
        space.executor.kind = match kind {
            ExecutorArg::Local => ExecutorKind::Local,
            ExecutorArg::Slurm => ExecutorKind::Slurm,
        };
    }
    if let (Some(parallel), ExecutorKind::Slurm) = (args.parallel, space.executor.kind) {
        space.executor.max_jobs = Some(parallel);
    }
    for dir in &args.warm_start {
        s.warm_start.push(WarmStartEntry {
            study: dir.clone(),
            pos: Pos::default(),
        });
    }
}

/// The text summary of a study.
fn print_outcome(
    space: &StudySpec,
    dir: &std::path::Path,
    result: &StudyResult,
) -> anyhow::Result<()> {
    if result.stopped == StopReason::Interrupted {
        eprintln!(
            "interrupted: {} trial(s) recorded in {}; continue with the same command and --resume",
            result.records.len(),
            dir.display()
        );
        return Ok(());
    }
    eprintln!("study stopped: {}", result.stopped);
    let Some(w) = &result.winner else {
        println!(
            "no config met every SLO in {} trial(s); see {}",
            result.records.len(),
            dir.join(TRIALS_CSV).display()
        );
        return Ok(());
    };
    let o = &space.objective;
    let s = &w.summary;
    println!(
        "winner: trial {}  {} {} = {}",
        s.number,
        o.direction.as_str(),
        o.metric,
        mean_text(s.mean, s.ci95, s.runs)
    );
    match (&w.baseline, w.gain_pct) {
        (Some(b), Some(g)) => {
            println!(
                "baseline: trial {} = {}; gain {}",
                b.number,
                mean_text(b.mean, b.ci95, b.values.len()),
                gain_text(g, w.gain_ci95)
            );
            if let Some(said) = gain_verdict(b.number == s.number, g, w.gain_ci95) {
                println!("{said}");
            }
            let short = resolution_text(
                space.search.verdict_target(),
                b.number == s.number,
                w.gain_ci95,
                s.runs,
                b.values.len(),
            );
            if let Some(said) = short {
                println!("{said}");
            }
        }
        _ => println!("baseline: not available (not run, or it broke an SLO)"),
    }
    if let Some(said) = tied_text(&w.tied) {
        println!("{said}");
    }
    for (k, v) in &w.summary.params {
        println!("  {k} = {v}");
    }
    let script = dir.join(BEST_SH);
    let text = std::fs::read_to_string(&script).unwrap_or_default();
    if let Some(line) = text.lines().last() {
        println!("command ({}):\n{line}", script.display());
    }
    Ok(())
}
