//! The progress bar of `infertune bench` on a terminal.

use crate::probe::ProbeObserver;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;

/// A bar over each run's measured requests (a counter when the run is bound by time), drawn
/// only when stderr is a terminal.
#[derive(Default)]
pub struct BenchBar {
    bar: Mutex<Option<ProgressBar>>,
}

impl ProbeObserver for BenchBar {
    fn started(&self, planned: u64) {
        *self.lock() = Some(bar(planned));
    }

    fn request_done(&self) {
        if let Some(bar) = &*self.lock() {
            bar.inc(1);
        }
    }

    fn finished(&self) {
        if let Some(bar) = self.lock().take() {
            bar.finish_and_clear();
        }
    }
}

impl BenchBar {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<ProgressBar>> {
        self.bar.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A bar over `planned` requests (a counter when 0), or a hidden one when stderr is not a
/// terminal.
fn bar(planned: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    if planned == 0 {
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner} {pos} requests, {elapsed}")
                .expect("valid template"),
        );
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        return bar;
    }
    let bar = ProgressBar::new(planned);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} requests, {elapsed} (eta {eta})")
            .expect("valid template"),
    );
    bar
}
