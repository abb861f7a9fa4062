//! Is a port taken? Checked before a spawn (port-busy) and after a teardown (port freed).

use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// The address to connect to for a server bound to `host` (a wildcard bind is reached on
/// loopback).
pub fn connect_host(host: &str) -> &str {
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

fn addresses(host: &str, port: u16) -> Vec<SocketAddr> {
    let host = connect_host(host)
        .trim_start_matches('[')
        .trim_end_matches(']');
    (host, port)
        .to_socket_addrs()
        .map(|a| a.collect())
        .unwrap_or_default()
}

/// True when something accepts connections on `host:port`.
pub fn listening(host: &str, port: u16) -> bool {
    addresses(host, port)
        .iter()
        .any(|a| TcpStream::connect_timeout(a, Duration::from_millis(200)).is_ok())
}

/// True when `host:port` is taken: something listens there, or binding it fails with
/// "address in use" (a socket bound without listening yet).
pub fn in_use(host: &str, port: u16) -> bool {
    if listening(host, port) {
        return true;
    }
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
