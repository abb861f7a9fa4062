//! Is a port taken? Checked before a spawn (port-busy) and after a teardown (port freed), by
//! reading the socket table or binding, never by connecting. Ports are reserved for a trial
//! across tuners with `reserve`.

use super::sockets;
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use std::fs::{File, OpenOptions};
use std::net::TcpListener;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

/// The address to connect to for a server bound to `host` (a wildcard bind is reached on
/// loopback).
pub(crate) fn connect_host(host: &str) -> &str {
    match host {
        "0.0.0.0" | "" => "127.0.0.1",
        "::" | "[::]" => "::1",
        other => other,
    }
}

/// `host:port` for URLs, bracketing IPv6 literals.
pub fn authority(host: &str, port: u16) -> String {
    let host = connect_host(host)
        .trim_start_matches('[')
        .trim_end_matches(']');
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// True when a socket listens on `host:port`, per the kernel's socket table (so a listener that
/// never accepts counts too); where the table cannot be read, when binding the port fails.
pub fn listening(host: &str, port: u16) -> bool {
    match sockets::listeners(host, port) {
        Some(found) => !found.is_empty(),
        None => bind_refused(host, port),
    }
}

/// True when `host:port` is taken: something listens there, or binding it fails with
/// "address in use" (a socket bound without listening yet).
pub fn in_use(host: &str, port: u16) -> bool {
    listening(host, port) || bind_refused(host, port)
}

fn bind_refused(host: &str, port: u16) -> bool {
    let bind_host = host.trim_start_matches('[').trim_end_matches(']');
    match TcpListener::bind((bind_host, port)) {
        Err(e) => e.kind() == std::io::ErrorKind::AddrInUse,
        Ok(_) => false,
    }
}

/// Wait until nothing listens on `host:port`, up to `deadline`; true when it is free.
pub fn wait_free(host: &str, port: u16, deadline: Instant) -> bool {
    loop {
        if !listening(host, port) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A port held for one server, by every tuner on this host, until it is dropped.
///
/// Binding a port to test it and releasing it again is a race: two tuners started a moment
/// apart pick the same port, and the second one's server fails to bind it. A lease holds an
/// exclusive `flock` on a file named after the port in `LEASE_DIR`, so a tuner that holds it
/// from allocation until its server is gone never shares the port with another tuner. The files
/// stay (removing one would race with a tuner locking it); the locks go with their holders,
/// killed ones included.
#[derive(Debug)]
pub struct PortLease {
    port: u16,
    _lock: Flock<File>,
}

impl PortLease {
    /// The reserved port.
    pub fn port(&self) -> u16 {
        self.port
    }
}

/// Where the lease files live: a fixed folder, shared by every tuner of every user.
pub(crate) const LEASE_DIR: &str = "/tmp/infertune-ports";

/// How far above the first port [`reserve`] looks.
const SPAN: u16 = 200;

/// Reserve the first port from `from` upward that no tuner holds and `host` can bind now.
pub(crate) fn reserve(host: &str, from: u16) -> std::io::Result<PortLease> {
    let dir = Path::new(LEASE_DIR);
    if !dir.is_dir() {
        std::fs::DirBuilder::new().recursive(true).create(dir)?;
        // Sticky and writable by all, like /tmp: every user's tuners share the leases.
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o1777));
    }
    for port in from..=from.saturating_add(SPAN) {
        let Some(lock) = lock(&dir.join(format!("{port}.lock")))? else {
            continue;
        };
        if !in_use(host, port) {
            return Ok(PortLease { port, _lock: lock });
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AddrInUse,
        format!(
            "no free port on {host} in {from}..={}",
            from.saturating_add(SPAN)
        ),
    ))
}

/// The exclusive lock of `path`, or `None` when another holder has it.
fn lock(path: &Path) -> std::io::Result<Option<Flock<File>>> {
    let file = match OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o666)
        .open(path)
    {
        Ok(file) => file,
        // Another user's file: reading is enough to lock it.
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => File::open(path)?,
        Err(e) => return Err(e),
    };
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(lock) => Ok(Some(lock)),
        Err((_, Errno::EWOULDBLOCK)) => Ok(None),
        Err((_, e)) => Err(e.into()),
    }
}
