//! The supervisor against hostile neighbours and servers: a foreign server on our port, two
//! tuners allocating the same port, a listener that never accepts, a daemon that leaves the
//! process group with `setsid()`, a server that dies in the middle of a stream.

use crate::kit::children as support;

use infertune::launch::leftover::{self, GroupRecord, PID_FILE};
use infertune::launch::ReadyRequest;
use infertune::launch::{group, port, ProcessLauncher, Server};
use infertune::record::FailureKind;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::*;

const GRACE: Duration = Duration::from_millis(500);

/// Waits until `log` holds a line starting with `prefix`; returns the rest of that line.
fn wait_logged(log: &Path, prefix: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if let Some(line) = text.lines().find(|l| l.starts_with(prefix)) {
            return line[prefix.len()..].trim().to_string();
        }
        assert!(Instant::now() < deadline, "no `{prefix}` in {text}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The fake server on `port`, started outside the launcher in a group of its own.
fn foreign_server(port: u16, log: &Path) -> Child {
    let child = Command::new(fixture("fake_openai.py"))
        .args(["--port", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(log).unwrap())
        .process_group(0)
        .spawn()
        .unwrap();
    wait_logged(log, "listening ");
    child
}

/// True while process `pid` is alive and not a zombie.
fn alive(pid: i32) -> bool {
    group::group_of(pid).is_some()
}

fn kill(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_foreign_server_answering_on_our_port_is_port_busy_not_ready() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let go = dir.path().join("go");
    // A launch wrapper that outlives its engine: the engine fails to bind, the wrapper stays.
    let script = format!(
        "echo pid $$; while [ ! -e {go} ]; do sleep 0.05; done; {server} --port {port}; sleep 30",
        go = go.display(),
        server = fixture("fake_openai.py").display(),
    );
    let spec = spec(
        Path::new("/bin/sh"),
        &["-c", &script],
        port,
        ReadyRequest::Chat,
    );
    let log = dir.path().join("server.log");
    let starting = {
        let log = log.clone();
        std::thread::spawn(move || {
            ProcessLauncher::new(infertune::engine::log_patterns()).spawn(
                &spec,
                &log,
                Duration::from_secs(20),
                GRACE,
            )
        })
    };
    wait_logged(&log, "pid ");
    // Another study's server takes the port after our spawn, before our engine binds it.
    let foreign = foreign_server(port, &dir.path().join("foreign.log"));
    std::fs::write(&go, "").unwrap();
    let started = Instant::now();
    let outcome = starting.join().unwrap();
    let took = started.elapsed();
    kill(foreign);
    let failure = match outcome {
        Ok(server) => panic!(
            "readiness accepted another process's server as group {}'s",
            server.pgid()
        ),
        Err(failure) => failure,
    };
    assert_eq!(failure.kind, FailureKind::PortBusy, "{}", failure.message);
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert_group_gone(logged_pid(&log));
}

#[test]
fn two_tuners_never_allocate_the_same_port() {
    let from = free_port();
    let first = infertune::exec::free_port("127.0.0.1", from).unwrap();
    let second = infertune::exec::free_port("127.0.0.1", from).unwrap();
    assert_ne!(
        first.port(),
        second.port(),
        "a port allocated to a running trial was handed out again"
    );
    let again = first.port();
    drop(first);
    let third = infertune::exec::free_port("127.0.0.1", from).unwrap();
    assert_eq!(third.port(), again, "a released port is free again");
}

#[test]
fn a_listener_that_never_accepts_is_not_free() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let log = dir.path().join("deaf.log");
    let script = format!(
        "import socket, time\n\
         s = socket.socket()\n\
         s.bind(('127.0.0.1', {port}))\n\
         s.listen(0)\n\
         print('listening', flush=True)\n\
         time.sleep(60)\n"
    );
    let deaf = Command::new("python3")
        .args(["-c", &script])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .process_group(0)
        .spawn()
        .unwrap();
    wait_logged(&log, "listening");
    // Fill the accept queue; later connects hang because nothing ever accepts.
    let address = format!("127.0.0.1:{port}").parse().unwrap();
    let _queued: Vec<_> = (0..4)
        .filter_map(|_| {
            std::net::TcpStream::connect_timeout(&address, Duration::from_millis(100)).ok()
        })
        .collect();
    assert!(port::in_use("127.0.0.1", port));
    assert!(
        !port::wait_free(
            "127.0.0.1",
            port,
            Instant::now() + Duration::from_millis(300)
        ),
        "a listener with a full backlog was taken for a free port"
    );
    kill(deaf);
}

#[test]
fn a_daemon_that_left_the_group_is_torn_down_with_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let log = dir.path().join("server.log");
    let server = ProcessLauncher::new(infertune::engine::log_patterns())
        .spawn(
            &fake_server(port, &["--daemon"]),
            &log,
            Duration::from_secs(30),
            GRACE,
        )
        .unwrap();
    let pgid = server.pgid();
    let daemon: i32 = wait_logged(&log, "daemon ").parse().unwrap();
    assert_ne!(
        group::group_of(daemon),
        Some(pgid),
        "the daemon left the group"
    );
    let stopped = Box::new(server).stop();
    let survived = alive(daemon);
    if survived {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(daemon),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    stopped.unwrap();
    assert!(!survived, "daemon {daemon} outlived the teardown");
    assert_group_gone(pgid);
    assert!(!port::listening("127.0.0.1", port));
}

#[test]
fn a_resumed_study_reclaims_a_daemon_of_a_killed_tuners_server() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("trial-0/server.log");
    let server = ProcessLauncher::new(infertune::engine::log_patterns())
        .spawn(
            &fake_server(free_port(), &["--daemon"]),
            &log,
            Duration::from_secs(30),
            GRACE,
        )
        .unwrap();
    let pgid = server.pgid();
    let daemon: i32 = wait_logged(&log, "daemon ").parse().unwrap();
    // The tuner dies: no teardown runs, the record stays.
    std::mem::forget(server);
    let text = std::fs::read_to_string(dir.path().join("trial-0").join(PID_FILE)).unwrap();
    let record: GroupRecord = serde_json::from_str(&text).unwrap();
    let notes = leftover::reclaim(dir.path(), GRACE);
    let survived = alive(daemon);
    if survived {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(daemon),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert!(!survived, "daemon {daemon} survived the reclaim: {notes:?}");
    assert!(
        record.descendants.iter().any(|p| p.pid == daemon),
        "the record names the daemon: {record:?}"
    );
    assert_group_gone(pgid);
}

#[test]
fn a_record_written_before_descendants_were_recorded_still_reads() {
    let old = r#"{"pgid":12,"start_ticks":34,"boot_id":"b"}"#;
    let record: GroupRecord = serde_json::from_str(old).unwrap();
    assert_eq!(record.pgid, 12);
    assert!(record.descendants.is_empty());
}

/// POST a streamed chat completion for model `tiny` to `port`; the raw response, read to its end.
fn stream_chat(port: u16) -> String {
    let body = r#"{"model": "tiny", "stream": true, "max_tokens": 4, "messages": []}"#;
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        conn,
        "POST /v1/chat/completions HTTP/1.0\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    let _ = conn.read_to_string(&mut response);
    response
}

#[test]
fn a_server_killed_in_the_middle_of_a_stream_says_how_it_ended_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let log = dir.path().join("server.log");
    let mut server = ProcessLauncher::new(infertune::engine::log_patterns())
        .spawn(
            &fake_server(port, &["--crash-after", "1"]),
            &log,
            Duration::from_secs(30),
            GRACE,
        )
        .unwrap();
    let pgid = server.pgid();
    assert_eq!(server.exited(), None, "a serving server has not exited");
    assert!(
        stream_chat(port).contains("[DONE]"),
        "the first stream ends"
    );
    assert!(
        !stream_chat(port).contains("[DONE]"),
        "the second stream dies"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let exit = loop {
        if let Some(exit) = server.exited() {
            break exit;
        }
        assert!(Instant::now() < deadline, "the server never exited");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(exit.ending, "killed by SIGKILL (9)");
    assert_eq!(
        exit.cause.as_deref(),
        Some("RuntimeError: CUDA error: an illegal memory access was encountered")
    );
    Box::new(server).stop().unwrap();
    assert_group_gone(pgid);
}
