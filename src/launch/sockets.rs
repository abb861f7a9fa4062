//! The kernel's TCP socket table (`/proc/net/tcp`, `/proc/net/tcp6`): which sockets listen on a
//! port, and which processes hold them. Reading the table sees a listener whatever it does with
//! connections, unlike connecting to it (a listener whose backlog is full never answers).

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, ToSocketAddrs};

/// The state code of a listening socket in the table.
const LISTEN: &str = "0A";

/// Inodes of the TCP sockets listening on `port` at an address that overlaps `host`'s (the same
/// address, or a wildcard on either side), each once; `None` when the table cannot be read.
/// The kernel prints the table a page per read, resuming by position, so a socket can show twice
/// while others open and close.
pub(crate) fn listeners(host: &str, port: u16) -> Option<Vec<u64>> {
    let host = address_of(host);
    let v4 = std::fs::read_to_string("/proc/net/tcp");
    let v6 = std::fs::read_to_string("/proc/net/tcp6");
    if v4.is_err() && v6.is_err() {
        return None;
    }
    let (v4, v6) = (v4.unwrap_or_default(), v6.unwrap_or_default());
    let mut found: Vec<u64> = parse(&v4)
        .chain(parse(&v6))
        .filter(|(addr, p, _)| *p == port && overlaps(*addr, host))
        .map(|(_, _, inode)| inode)
        .collect();
    found.sort_unstable();
    found.dedup();
    Some(found)
}

/// `(address, port, inode)` of each listening socket in one table.
fn parse(table: &str) -> impl Iterator<Item = (IpAddr, u16, u64)> + '_ {
    table.lines().skip(1).filter_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.get(3) != Some(&LISTEN) {
            return None;
        }
        let (addr, port) = fields.get(1)?.split_once(':')?;
        let inode = fields.get(9)?.parse().ok()?;
        Some((
            hex_address(addr)?,
            u16::from_str_radix(port, 16).ok()?,
            inode,
        ))
    })
}

/// An address as the table prints it: 32-bit words in hexadecimal, each in host byte order.
fn hex_address(hex: &str) -> Option<IpAddr> {
    let words = (0..hex.len() / 8)
        .map(|i| u32::from_str_radix(hex.get(i * 8..i * 8 + 8)?, 16).ok())
        .collect::<Option<Vec<u32>>>()?;
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
    match bytes.len() {
        4 => Some(IpAddr::V4(Ipv4Addr::new(
            bytes[0], bytes[1], bytes[2], bytes[3],
        ))),
        16 => Some(IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(bytes).ok()?)).to_canonical()),
        _ => None,
    }
}

/// The address `host` names (`None`: unknown, overlapping everything).
fn address_of(host: &str) -> Option<IpAddr> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if bare.is_empty() {
        return Some(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
    }
    match bare.parse::<IpAddr>() {
        Ok(addr) => Some(addr.to_canonical()),
        Err(_) => (bare, 0).to_socket_addrs().ok()?.next().map(|a| a.ip()),
    }
}

fn overlaps(listener: IpAddr, host: Option<IpAddr>) -> bool {
    match host {
        Some(host) => listener.is_unspecified() || host.is_unspecified() || listener == host,
        None => true,
    }
}

/// The inodes of the sockets process `pid` holds open (empty when its descriptors cannot be
/// read: it is gone, or not ours to inspect).
pub(crate) fn socket_inodes(pid: i32) -> HashSet<u64> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return HashSet::new();
    };
    fds.filter_map(|fd| {
        let target = std::fs::read_link(fd.ok()?.path()).ok()?;
        let target = target.to_str()?;
        target
            .strip_prefix("socket:[")?
            .strip_suffix(']')?
            .parse()
            .ok()
    })
    .collect()
}

/// The processes holding any socket of `inodes` open, found by scanning `/proc`.
pub(crate) fn holders(inodes: &[u64]) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut pids: Vec<i32> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| socket_inodes(*pid).iter().any(|i| inodes.contains(i)))
        .collect();
    pids.sort_unstable();
    pids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_tables() {
        let v4 = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
           0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0\n\
           1: 0100007F:1F40 0100007F:C000 01 00000000:00000000 00:00000000 00000000     0        0 4243 1 0\n";
        let rows: Vec<_> = parse(v4).collect();
        let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
        assert_eq!(rows, vec![(loopback, 8000, 4242)]);
        let v6 = "  sl  local_address rem_address st tx rx tr tm uid timeout inode\n\
           0: 00000000000000000000000001000000:1F40 00000000000000000000000000000000:0000 0A 0:0 0:0 0 0 0 77 1\n";
        let rows: Vec<_> = parse(v6).collect();
        assert_eq!(rows, vec![(IpAddr::V6(Ipv6Addr::LOCALHOST), 8000, 77)]);
    }

    #[test]
    fn a_wildcard_overlaps_every_address() {
        let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let any = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
        assert!(overlaps(any, address_of("127.0.0.1")));
        assert!(overlaps(loopback, address_of("0.0.0.0")));
        assert!(overlaps(loopback, address_of("127.0.0.1")));
        assert!(!overlaps(loopback, address_of("10.1.2.3")));
    }

    #[test]
    fn a_listener_is_seen_once_while_other_sockets_come_and_go() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let churn: Vec<_> = (0..2)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let opened: Vec<_> = (0..50)
                            .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
                            .collect();
                        drop(opened);
                    }
                })
            })
            .collect();
        let miscounted = (0..300)
            .filter(|_| listeners("127.0.0.1", port).unwrap().len() != 1)
            .count();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        churn.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(
            miscounted, 0,
            "{port}: not one listener {miscounted} times in 300"
        );
    }

    #[test]
    fn finds_a_listener_that_never_accepts_and_who_holds_it() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let found = listeners("127.0.0.1", port).unwrap();
        assert_eq!(found.len(), 1);
        assert!(socket_inodes(std::process::id() as i32).contains(&found[0]));
        drop(listener);
        // Another process may take the freed port at once; this socket must be gone.
        assert!(!listeners("127.0.0.1", port).unwrap().contains(&found[0]));
    }
}
