//! The progress of `infertune bench`: which run of how many, requests done and the time left,
//! as a bar on a terminal and as one line per run otherwise.

use crate::probe::ProbeObserver;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How many runs a bench session makes.
#[derive(Clone, Copy, Debug)]
pub enum Runs {
    /// Exactly this many, sending this many measured requests in all when every run is bound
    /// by a request count.
    Listed(usize, Option<u64>),
    /// A load search: at most this many.
    AtMost(usize),
}

/// Draws each run's bar (a counter when the run is bound by time) with the run's number and the
/// whole session's requests and time left, when stderr is a terminal; otherwise writes one line
/// to stderr as each run starts.
pub(crate) struct BenchBar {
    terminal: bool,
    state: Mutex<State>,
}

struct State {
    runs: Runs,
    run: usize,
    label: String,
    done: u64,
    since: Instant,
    bar: Option<ProgressBar>,
}

impl BenchBar {
    /// A bar for a session of `runs`.
    pub fn new(runs: Runs) -> Self {
        BenchBar {
            terminal: std::io::stderr().is_terminal(),
            state: Mutex::new(State {
                runs,
                run: 0,
                label: String::new(),
                done: 0,
                since: Instant::now(),
                bar: None,
            }),
        }
    }

    /// The next run, at the load named `label`, is about to start.
    pub(crate) fn begin_run(&self, label: &str) {
        let mut state = self.lock();
        state.run += 1;
        state.label = label.to_string();
        if !self.terminal {
            eprintln!("{}: {}", state.headline(), state.overall());
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl ProbeObserver for BenchBar {
    fn started(&self, planned: u64) {
        if self.terminal {
            let mut state = self.lock();
            let bar = bar(planned);
            bar.set_prefix(state.headline());
            bar.set_message(state.overall());
            state.bar = Some(bar);
        }
    }

    fn request_done(&self) {
        let mut state = self.lock();
        state.done += 1;
        if let Some(bar) = &state.bar {
            bar.set_message(state.overall());
            bar.inc(1);
        }
    }

    fn finished(&self) {
        if let Some(bar) = self.lock().bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl State {
    /// `run 2/6 (concurrency 8)`, or `run 3 of at most 20 (...)` in a search.
    fn headline(&self) -> String {
        match self.runs {
            Runs::Listed(n, _) => format!("run {}/{n} ({})", self.run, self.label),
            Runs::AtMost(n) => format!("run {} of at most {n} ({})", self.run, self.label),
        }
    }

    /// The session's requests done, of how many, and the time left when that is known.
    fn overall(&self) -> String {
        let planned = match self.runs {
            Runs::Listed(_, planned) => planned,
            Runs::AtMost(_) => None,
        };
        overall(self.done, planned, self.since.elapsed())
    }
}

/// `120/560 requests done, eta 40s`: the time left assumes the pace so far.
fn overall(done: u64, planned: Option<u64>, elapsed: Duration) -> String {
    match planned {
        Some(total) if done > 0 => {
            let left = elapsed.as_secs_f64() * total.saturating_sub(done) as f64 / done as f64;
            let eta = humantime::format_duration(Duration::from_secs(left.round() as u64));
            format!("{done}/{total} requests done, eta {eta}")
        }
        Some(total) => format!("0/{total} requests done"),
        None => format!("{done} requests done"),
    }
}

/// A bar over `planned` requests, or a counter when 0.
fn bar(planned: u64) -> ProgressBar {
    if planned == 0 {
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix} {spinner} {pos} requests, {elapsed}; session: {msg}",
            )
            .expect("valid template"),
        );
        bar.enable_steady_tick(Duration::from_millis(200));
        return bar;
    }
    let bar = ProgressBar::new(planned);
    bar.set_style(
        ProgressStyle::with_template(
            "{prefix} {bar:30} {pos}/{len} requests (eta {eta}); session: {msg}",
        )
        .expect("valid template"),
    );
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_name_the_run_the_requests_done_and_the_time_left() {
        let mut state = State {
            runs: Runs::Listed(6, Some(560)),
            run: 2,
            label: "concurrency 8".into(),
            done: 140,
            since: Instant::now(),
            bar: None,
        };
        assert_eq!(state.headline(), "run 2/6 (concurrency 8)");
        assert_eq!(
            overall(140, Some(560), Duration::from_secs(10)),
            "140/560 requests done, eta 30s"
        );
        assert_eq!(overall(0, Some(560), Duration::ZERO), "0/560 requests done");
        state.runs = Runs::AtMost(20);
        assert_eq!(state.headline(), "run 2 of at most 20 (concurrency 8)");
        assert_eq!(state.overall(), "140 requests done");
    }
}
