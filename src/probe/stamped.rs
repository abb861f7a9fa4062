//! Reads that carry the time the kernel received the bytes (`SO_TIMESTAMPNS`), so a token's
//! arrival time does not depend on how soon the probe gets to read it: at thousands of
//! streams a busy client reads late, but the stamp is the same.

use nix::sys::socket::{recvmsg, setsockopt, sockopt, ControlMessageOwned, MsgFlags};
use nix::sys::time::TimeSpec;
use std::io::{self, IoSliceMut, Write};
use std::net::TcpStream as StdTcpStream;
use std::os::fd::{AsFd, AsRawFd};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// Most bytes one read takes: the space handed to the kernel is zeroed first, and a streamed
/// event is a few hundred bytes.
const READ_LIMIT: usize = 4096;

/// A kernel stamp older than this is not trusted (the wall clock was stepped meanwhile).
const MAX_STAMP_AGE: Duration = Duration::from_secs(1);

/// When one connection's latest bytes arrived, kept as nanoseconds after `base` (plus one,
/// so 0 means unset); and what a `watcher` thread saw waiting on the socket.
#[derive(Debug)]
pub struct Stamps {
    base: Instant,
    arrival: AtomicU64,
    /// Reads made: odd while one is under way.
    reads: AtomicU64,
    /// Bytes read so far.
    consumed: AtomicU64,
    /// Set with `early`, so that reads need not lock it to see there is nothing.
    has_early: AtomicBool,
    early: Mutex<Option<Early>>,
}

/// Bytes seen waiting on a socket, unread, and when the last of them arrived.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Early {
    /// Stream offset of the first of them.
    start: u64,
    /// How many.
    len: usize,
    /// When the kernel received the last of them.
    at: Instant,
}

impl Stamps {
    fn new() -> Self {
        Stamps {
            base: Instant::now(),
            arrival: AtomicU64::new(0),
            reads: AtomicU64::new(0),
            consumed: AtomicU64::new(0),
            has_early: AtomicBool::new(false),
            early: Mutex::new(None),
        }
    }

    /// Runs `read` (one read of the socket), counting it and the bytes it took.
    fn counted(
        &self,
        read: impl FnOnce() -> io::Result<(usize, Instant)>,
    ) -> io::Result<(usize, Instant)> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        let result = read();
        if let Ok((bytes, _)) = &result {
            self.consumed.fetch_add(*bytes as u64, Ordering::SeqCst);
        }
        self.reads.fetch_add(1, Ordering::SeqCst);
        result
    }

    /// Looks at what waits unread on `socket` (another descriptor of the stream) without
    /// taking it, and keeps it as [`Early`] unless a read of the stream overlapped the look.
    pub(crate) fn look(&self, socket: &impl AsRawFd, buf: &mut [u8]) {
        let before = self.reads.load(Ordering::SeqCst);
        if before % 2 == 1 {
            return;
        }
        let start = self.consumed.load(Ordering::SeqCst);
        let Ok((len, stamp)) = receive(socket, buf, MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT)
        else {
            return;
        };
        if len == 0 || stamp.is_none() || self.reads.load(Ordering::SeqCst) != before {
            return;
        }
        let at = stamp_instant(stamp, Instant::now());
        *self.early.lock().expect("early lock") = Some(Early { start, len, at });
        self.has_early.store(true, Ordering::SeqCst);
    }

    /// After a read of `read` bytes: how many of its first bytes [`Stamps::look`] saw waiting
    /// before it, and when the last of those arrived; `None` when the look was of other bytes.
    pub(crate) fn seen_early(&self, read: usize) -> Option<(usize, Instant)> {
        if !self.has_early.swap(false, Ordering::SeqCst) {
            return None;
        }
        let early = self.early.lock().expect("early lock").take()?;
        let read_start = self.consumed.load(Ordering::SeqCst) - read as u64;
        (early.start == read_start).then(|| (early.len.min(read), early.at))
    }

    fn encode(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.base).as_nanos() as u64 + 1
    }

    fn decode(&self, value: u64) -> Option<Instant> {
        (value > 0).then(|| self.base + Duration::from_nanos(value - 1))
    }

    /// Records a read at `at`; arrivals never go backwards (converting a wall-clock stamp
    /// has some jitter, far below a token's spacing).
    fn arrived(&self, at: Instant) {
        self.arrival.fetch_max(self.encode(at), Ordering::Relaxed);
    }

    /// When the latest bytes arrived (the connection's creation before any).
    pub fn last_arrival(&self) -> Instant {
        self.decode(self.arrival.load(Ordering::Relaxed))
            .unwrap_or(self.base)
    }
}

/// A connected, non-blocking TCP stream that records when its data arrived.
pub struct StampedStream {
    fd: AsyncFd<StdTcpStream>,
    stamps: Arc<Stamps>,
}

impl StampedStream {
    /// Takes over `stream` and asks the kernel to stamp received data.
    pub fn new(stream: TcpStream) -> io::Result<Self> {
        let stream = stream.into_std()?;
        enable_receive_stamps(&stream);
        // SAFETY: a std `TcpStream` owns its descriptor: it stays open, and is the one
        // `as_raw_fd` returns, until the stream (owned by the `AsyncFd`) is dropped.
        let fd = unsafe { AsyncFd::register(stream) }?;
        Ok(StampedStream {
            fd,
            stamps: Arc::new(Stamps::new()),
        })
    }

    /// This stream's stamps, shared.
    pub fn stamps(&self) -> Arc<Stamps> {
        self.stamps.clone()
    }

    /// The socket.
    pub fn socket(&self) -> &StdTcpStream {
        self.fd.get_ref()
    }

    /// Reads what has arrived into `buf`: the byte count (0 at the end of the stream); when
    /// the kernel received the bytes goes to [`Stamps`]. A short read means the socket is
    /// drained, so the next call waits for readiness instead of making a read that would
    /// only block.
    pub(crate) fn poll_receive(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            let mut guard = ready!(self.fd.poll_read_ready(cx))?;
            let stamps = &self.stamps;
            match guard.try_io(|fd| stamps.counted(|| receive_stamped(fd.get_ref(), buf))) {
                Ok(Ok((read, at))) => {
                    if read < buf.len() {
                        guard.clear_ready();
                    }
                    if read > 0 {
                        self.stamps.arrived(at);
                    }
                    return Poll::Ready(Ok(read));
                }
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                Err(_would_block) => continue,
            }
        }
    }

    /// Writes as much of `data` as the socket takes now.
    pub(crate) fn poll_send(&self, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        loop {
            let mut guard = ready!(self.fd.poll_write_ready(cx))?;
            match guard.try_io(|fd| fd.get_ref().write(data)) {
                Ok(result) => return Poll::Ready(result),
                Err(_would_block) => continue,
            }
        }
    }
}

/// Asks the kernel to stamp the data `socket` receives. Without stamps (an old or unusual
/// kernel, or the first moment after the first socket of the machine asked for them)
/// [`receive_stamped`] times a read when it happens.
pub fn enable_receive_stamps(socket: &impl AsFd) {
    let _ = setsockopt(socket, sockopt::ReceiveTimestampns, &true);
}

/// One non-blocking read of `socket` into `buf`: the bytes read and when the kernel received
/// them (the latest of them, when several segments are read at once).
pub fn receive_stamped(socket: &impl AsRawFd, buf: &mut [u8]) -> io::Result<(usize, Instant)> {
    let (read, stamp) = receive(socket, buf, MsgFlags::empty())?;
    Ok((read, stamp_instant(stamp, Instant::now())))
}

/// One `recvmsg` into `buf`: bytes read and the kernel's receive stamp, if any.
fn receive(
    socket: &impl AsRawFd,
    buf: &mut [u8],
    flags: MsgFlags,
) -> io::Result<(usize, Option<TimeSpec>)> {
    let mut space = nix::cmsg_space!(TimeSpec);
    let mut iov = [IoSliceMut::new(buf)];
    let message = recvmsg::<()>(socket.as_raw_fd(), &mut iov, Some(&mut space), flags)?;
    let stamp = message.cmsgs()?.find_map(|cmsg| match cmsg {
        ControlMessageOwned::ScmTimestampns(stamp) => Some(stamp),
        _ => None,
    });
    Ok((message.bytes, stamp))
}

/// The monotonic instant of a wall-clock kernel stamp, or `now` when it is implausible.
fn stamp_instant(stamp: Option<TimeSpec>, now: Instant) -> Instant {
    let Some(stamp) = stamp else {
        return now;
    };
    let Ok(wall) = SystemTime::now().duration_since(UNIX_EPOCH) else {
        return now;
    };
    let stamped = Duration::new(stamp.tv_sec().max(0) as u64, stamp.tv_nsec() as u32);
    match wall.checked_sub(stamped) {
        Some(age) if age <= MAX_STAMP_AGE => now.checked_sub(age).unwrap_or(now),
        _ => now,
    }
}

impl AsyncRead for StampedStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let unfilled = buf.initialize_unfilled_to(buf.remaining().min(READ_LIMIT));
        let read = ready!(self.poll_receive(cx, unfilled))?;
        buf.advance(read);
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for StampedStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_send(cx, data)
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.fd.get_ref().shutdown(std::net::Shutdown::Write))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn stamps_are_converted_and_implausible_ones_ignored() {
        let now = Instant::now();
        let wall = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        let ago = |d: Duration| {
            let t = wall - d;
            Some(TimeSpec::new(t.as_secs() as i64, t.subsec_nanos() as i64))
        };
        let got = stamp_instant(ago(Duration::from_millis(20)), now);
        let age = now - got;
        assert!(
            age >= Duration::from_millis(19) && age <= Duration::from_millis(40),
            "{age:?}"
        );
        assert_eq!(stamp_instant(ago(Duration::from_secs(30)), now), now);
        assert_eq!(stamp_instant(None, now), now);
    }

    #[tokio::test]
    async fn reads_are_stamped_when_the_bytes_arrived_not_when_read() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let client = TcpStream::connect(address).await.unwrap();
        let (mut server, _) = listener.accept().await.unwrap();
        let mut stream = StampedStream::new(client).unwrap();
        let stamps = stream.stamps();
        // When no socket had asked for stamps yet, the kernel turns stamping on a moment
        // later (deferred work); until then reads are timed when they happen.
        tokio::time::sleep(Duration::from_millis(50)).await;
        server.write_all(b"ping").await.unwrap();
        let sent = Instant::now();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut buf = [0u8; 16];
        let read = stream.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..read], b"ping");
        let lag = stamps.last_arrival().saturating_duration_since(sent);
        assert!(
            lag < Duration::from_millis(25),
            "stamped {lag:?} after the send"
        );
        stream.write_all(b"pong").await.unwrap();
        let read = server.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..read], b"pong");
    }
}
