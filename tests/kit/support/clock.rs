//! A precise timer for the fake server. Tokio's timer fires on millisecond ticks (up to ~2 ms
//! late), which would hide the client's own error; this one wakes tasks from a dedicated
//! thread within about 0.1 ms of their deadline (deadlines are rounded up to 100 µs so
//! streams due together are woken together), never early.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Condvar, Mutex, OnceLock};
use std::task::Waker;
use std::time::{Duration, Instant};

const GRAIN: Duration = Duration::from_micros(100);

struct Entry {
    at: Instant,
    seq: u64,
    waker: Waker,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

struct Timer {
    epoch: Instant,
    queue: Mutex<(BinaryHeap<Reverse<Entry>>, u64)>,
    changed: Condvar,
}

fn timer() -> &'static Timer {
    static TIMER: OnceLock<&'static Timer> = OnceLock::new();
    TIMER.get_or_init(|| {
        let timer: &'static Timer = Box::leak(Box::new(Timer {
            epoch: Instant::now(),
            queue: Mutex::new((BinaryHeap::new(), 0)),
            changed: Condvar::new(),
        }));
        std::thread::Builder::new()
            .name("fake-clock".into())
            .spawn(move || timer.run())
            .expect("spawn the fake server's clock thread");
        timer
    })
}

/// Wakes `waker` once `at` has passed.
pub fn wake_at(at: Instant, waker: &Waker) {
    let timer = timer();
    let grains = at
        .saturating_duration_since(timer.epoch)
        .as_nanos()
        .div_ceil(GRAIN.as_nanos());
    let at = timer.epoch + GRAIN * grains as u32;
    let mut queue = timer.queue.lock().unwrap();
    let earliest = queue.0.peek().is_none_or(|Reverse(e)| at < e.at);
    queue.1 += 1;
    let seq = queue.1;
    queue.0.push(Reverse(Entry {
        at,
        seq,
        waker: waker.clone(),
    }));
    drop(queue);
    if earliest {
        timer.changed.notify_one();
    }
}

impl Timer {
    fn run(&self) {
        let mut due = Vec::new();
        let mut queue = self.queue.lock().unwrap();
        loop {
            let now = Instant::now();
            while queue.0.peek().is_some_and(|Reverse(e)| e.at <= now) {
                due.push(queue.0.pop().unwrap().0.waker);
            }
            if !due.is_empty() {
                drop(queue);
                due.drain(..).for_each(Waker::wake);
                queue = self.queue.lock().unwrap();
                continue;
            }
            queue = match queue.0.peek() {
                Some(Reverse(e)) => {
                    let wait = e.at - now;
                    self.changed.wait_timeout(queue, wait).unwrap().0
                }
                None => self.changed.wait(queue).unwrap(),
            };
        }
    }
}
