//! Progress bar on a terminal.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;

/// A bar over `planned` requests (a counter when 0), or a hidden one when not wanted or
/// stderr is not a terminal.
pub(crate) fn bar(wanted: bool, planned: u64) -> ProgressBar {
    if !wanted || !std::io::stderr().is_terminal() {
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
