//! Server signals that end a probe before its end: the scheduler thrashing (preemptions
//! climbing while the queue grows), the KV cache pinned full while requests wait, or a fatal
//! error in the server's log.

use super::catalogue as names;
use super::summary::Snapshot;
use crate::record::ServerSignal;

/// Scrape intervals a pattern must last before it stops a probe.
pub(crate) const WINDOW: usize = 4;

/// KV-cache usage that counts as full.
const KV_FULL: f64 = 0.99;

/// Log texts only a dying server prints.
const FATAL: [&str; 6] = [
    "EngineDeadError",
    "torch.OutOfMemoryError",
    "CUDA error:",
    "NPU out of memory",
    "Segmentation fault",
    "core dumped",
];

/// The signal in the scrapes taken during the probe so far, with what was seen.
pub(crate) fn judge(during: &[Snapshot]) -> Option<(ServerSignal, String)> {
    thrashing(during).or_else(|| kv_pinned(during))
}

/// The values of the first of `candidates` in each of the last `n` scrapes; `None` unless
/// every one of them has it.
fn last_values(during: &[Snapshot], candidates: &[&str], n: usize) -> Option<Vec<f64>> {
    let recent = during.get(during.len().checked_sub(n)?..)?;
    let name = candidates
        .iter()
        .find(|name| recent[0].exposition.has(name))?;
    recent.iter().map(|s| s.exposition.value(name)).collect()
}

/// Requests the queue must grow by (and at least double) for preemptions to count as
/// thrashing; a config that preempts now and then while a request or two waits is only busy.
const QUEUE_GROWTH: f64 = 8.0;

/// Preemptions rose in every one of the last `WINDOW` intervals while the queue grew by at
/// least `QUEUE_GROWTH` requests and at least doubled.
fn thrashing(during: &[Snapshot]) -> Option<(ServerSignal, String)> {
    let preempted = last_values(during, names::PREEMPTIONS, WINDOW + 1)?;
    let waiting = last_values(during, names::WAITING, WINDOW + 1)?;
    let climbing = preempted.windows(2).all(|w| w[1] > w[0]);
    let (first, last) = (waiting[0], waiting[WINDOW]);
    let grew = last - first >= QUEUE_GROWTH && last >= 2.0 * first;
    (climbing && grew).then(|| {
        (
            ServerSignal::Thrashing,
            format!(
                "server thrashing: {} preemptions in the last {WINDOW} scrapes while the queue grew from {first} to {last}",
                preempted[WINDOW] - preempted[0]
            ),
        )
    })
}

/// KV cache at least `KV_FULL` with requests waiting in each of the last `2 × WINDOW` scrapes.
fn kv_pinned(during: &[Snapshot]) -> Option<(ServerSignal, String)> {
    let n = 2 * WINDOW;
    let usage = last_values(during, names::KV_USAGE, n)?;
    let waiting = last_values(during, names::WAITING, n)?;
    let pinned = usage.iter().all(|u| *u >= KV_FULL) && waiting.iter().all(|w| *w > 0.0);
    pinned.then(|| {
        (
            ServerSignal::KvCacheFull,
            format!("KV cache full with requests waiting in each of the last {n} scrapes"),
        )
    })
}

/// The first fatal line in `log` (a stretch of the server's log).
pub(crate) fn fatal_line(log: &str) -> Option<&str> {
    log.lines()
        .find(|line| FATAL.iter().any(|pattern| line.contains(pattern)))
        .map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::server::exposition::Exposition;

    fn scrape(preemptions: u32, waiting: u32, kv: f64) -> Snapshot {
        let text = format!(
            "vllm:num_preemptions_total{{engine=\"0\"}} {preemptions}\nvllm:num_requests_waiting {waiting}\nvllm:kv_cache_usage_perc {kv}\n"
        );
        Snapshot {
            at: 0.0,
            exposition: Exposition::parse(&text).unwrap(),
        }
    }

    #[test]
    fn climbing_preemptions_with_a_growing_queue_is_thrashing() {
        let rising: Vec<Snapshot> = (0..6).map(|i| scrape(10 * i, 5 * i, 0.9)).collect();
        let (signal, why) = judge(&rising).unwrap();
        assert_eq!(signal, ServerSignal::Thrashing);
        assert!(why.contains("40 preemptions"), "{why}");
        // A pause in preemptions, or a queue that drains, is not thrashing.
        let mut paused = rising.clone();
        paused[4] = scrape(30, 9, 0.9);
        assert_eq!(judge(&paused), None);
        let draining: Vec<Snapshot> = (0..6).map(|i| scrape(10 * i, 10 - i, 0.9)).collect();
        assert_eq!(judge(&draining), None);
        // A busy config: preempting while the queue holds a request or two.
        let busy: Vec<Snapshot> = (0..6).map(|i| scrape(3 * i, i % 2, 0.95)).collect();
        assert_eq!(judge(&busy), None);
        assert_eq!(judge(&rising[..WINDOW]), None, "too few scrapes to judge");
    }

    #[test]
    fn a_kv_cache_pinned_full_with_waiters_stops_and_a_busy_one_does_not() {
        let pinned: Vec<Snapshot> = (0..2 * WINDOW).map(|_| scrape(3, 4, 1.0)).collect();
        assert_eq!(judge(&pinned).unwrap().0, ServerSignal::KvCacheFull);
        let mut dipped = pinned.clone();
        dipped[3] = scrape(3, 4, 0.7);
        assert_eq!(judge(&dipped), None);
        let no_queue: Vec<Snapshot> = (0..2 * WINDOW).map(|_| scrape(3, 0, 1.0)).collect();
        assert_eq!(judge(&no_queue), None);
    }

    #[test]
    fn fatal_log_lines_are_found() {
        let log =
            "INFO ok\n(EngineCore pid=1) ERROR vllm.v1.engine.exceptions.EngineDeadError: dead\n";
        assert!(fatal_line(log).unwrap().contains("EngineDeadError"));
        assert_eq!(fatal_line("INFO: all good\n"), None);
    }
}
