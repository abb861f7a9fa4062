//! A second thread that notes when a stream's first token arrives, so TTFT stays exact when
//! the probe's own thread is too busy to read in time.
//!
//! Arrival times come from the kernel's receive stamp of each read. When bytes wait unread
//! until more arrive, the kernel merges them and keeps only the later stamp: at thousands of
//! streams on a saturated machine, a first token read more than one inter-token gap late
//! would take its successor's time. So once a response has started, its socket is also
//! watched from this thread, which sleeps in its own epoll and, as soon as bytes wait, looks at
//! them without reading (`MSG_PEEK`) and keeps their stamp ([`Stamps::look`]). The probe's
//! thread later reads those bytes as usual and dates them no later than that look.

use super::stamped::Stamps;
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use nix::sys::eventfd::EventFd;
use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Epoll data of the event that stops the thread.
const STOP: u64 = u64::MAX;

/// Bytes looked at, at most (a first token's event is a few hundred).
const LOOK_SIZE: usize = 16 * 1024;

/// Events taken per wait.
const EVENTS: usize = 256;

/// The watching thread; stopped when dropped.
pub(crate) struct ArrivalWatcher {
    shared: Arc<Shared>,
    stop: EventFd,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    epoll: Epoll,
    armed: Mutex<HashMap<u64, Armed>>,
    next_id: AtomicU64,
}

/// A watched socket: a descriptor of its own (the stream may close meanwhile) and its stamps.
struct Armed {
    socket: OwnedFd,
    stamps: Arc<Stamps>,
}

/// One watched socket; dropping it stops the watch if the thread has not looked yet.
pub(crate) struct WatchedSocket {
    shared: Arc<Shared>,
    id: u64,
}

impl ArrivalWatcher {
    /// Starts the thread.
    pub fn start() -> std::io::Result<ArrivalWatcher> {
        let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?;
        let stop = EventFd::new()?;
        epoll.add(stop.as_fd(), EpollEvent::new(EpollFlags::EPOLLIN, STOP))?;
        let shared = Arc::new(Shared {
            epoll,
            armed: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
        });
        let thread = std::thread::Builder::new()
            .name("probe-arrivals".into())
            .spawn({
                let shared = Arc::clone(&shared);
                move || shared.run()
            })?;
        Ok(ArrivalWatcher {
            shared,
            stop,
            thread: Some(thread),
        })
    }

    /// Watches `socket` until bytes wait on it (then [`Stamps::look`] records them) or the
    /// returned watch is dropped; `None` when the socket cannot be watched.
    pub(crate) fn watch(&self, socket: &impl AsFd, stamps: &Arc<Stamps>) -> Option<WatchedSocket> {
        let socket = socket.as_fd().try_clone_to_owned().ok()?;
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let mut armed = self.shared.armed.lock().expect("watch lock");
        let flags = EpollFlags::EPOLLIN | EpollFlags::EPOLLONESHOT;
        self.shared
            .epoll
            .add(socket.as_fd(), EpollEvent::new(flags, id))
            .ok()?;
        let stamps = Arc::clone(stamps);
        armed.insert(id, Armed { socket, stamps });
        Some(WatchedSocket {
            shared: Arc::clone(&self.shared),
            id,
        })
    }
}

impl Drop for ArrivalWatcher {
    fn drop(&mut self) {
        let _ = self.stop.write(1);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl WatchedSocket {
    /// Whether the thread has looked at the socket already.
    pub fn done(&self) -> bool {
        !self
            .shared
            .armed
            .lock()
            .expect("watch lock")
            .contains_key(&self.id)
    }
}

impl Drop for WatchedSocket {
    fn drop(&mut self) {
        if let Some(armed) = self.shared.take(self.id) {
            let _ = self.shared.epoll.delete(armed.socket.as_fd());
        }
    }
}

impl Shared {
    fn take(&self, id: u64) -> Option<Armed> {
        self.armed.lock().expect("watch lock").remove(&id)
    }

    fn run(&self) {
        let mut events = [EpollEvent::empty(); EVENTS];
        let mut buf = vec![0u8; LOOK_SIZE];
        loop {
            let ready = match self.epoll.wait(&mut events, EpollTimeout::NONE) {
                Ok(ready) => ready,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(_) => return,
            };
            for event in &events[..ready] {
                if event.data() == STOP {
                    return;
                }
                if let Some(armed) = self.take(event.data()) {
                    let _ = self.epoll.delete(armed.socket.as_fd());
                    armed.stamps.look(&armed.socket, &mut buf);
                }
            }
        }
    }
}
