//! The supervisor against small real child programs. Every test checks that the child's process
//! group is empty afterwards.

use crate::kit::children as support;

use infertune::launch::ReadyRequest;
use infertune::launch::{port, Launcher, ProcessLauncher, Server, StartFailure};
use infertune::record::FailureKind;
use std::path::Path;
use std::time::{Duration, Instant};
use support::*;

const GRACE: Duration = Duration::from_millis(500);

fn start_failure(
    spec: &infertune::launch::LaunchSpec,
    log: &Path,
    timeout: Duration,
) -> StartFailure {
    match ProcessLauncher::new(infertune::engine::log_patterns()).spawn(spec, log, timeout, GRACE) {
        Ok(server) => panic!(
            "expected a failed start, got a server in group {}",
            server.pgid()
        ),
        Err(failure) => failure,
    }
}

fn failing_child(log_fixture: &str, status: &str, port: u16) -> infertune::launch::LaunchSpec {
    let log = fixture(&format!("logs/{log_fixture}"));
    spec(
        &fixture("print_log.sh"),
        &[log.to_str().unwrap(), status],
        port,
        ReadyRequest::Chat,
    )
}

#[test]
fn cooperative_server_becomes_ready_and_stops_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let log = dir.path().join("trial-1/server.log");
    let server = ProcessLauncher::new(infertune::engine::log_patterns())
        .spawn(
            &fake_server(port, &["--listen-delay", "0.3"]),
            &log,
            Duration::from_secs(30),
            GRACE,
        )
        .unwrap();
    let pgid = server.pgid();
    assert_eq!(server.base_url(), format!("http://127.0.0.1:{port}"));
    assert!(server.ready_after() >= Duration::from_millis(300));
    assert!(!infertune::launch::group::members(pgid).is_empty());
    assert!(port::listening("127.0.0.1", port));
    Box::new(server).stop().unwrap();
    assert_group_gone(pgid);
    assert!(!port::listening("127.0.0.1", port));
    assert!(std::fs::read_to_string(&log).unwrap().contains("listening"));
}

#[test]
fn completions_api_readiness_works_through_the_launcher_trait() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut spec = fake_server(port, &[]);
    spec.readiness.api = ReadyRequest::Completions;
    let log = dir.path().join("server.log");
    let launcher: Box<dyn Launcher> =
        Box::new(ProcessLauncher::new(infertune::engine::log_patterns()));
    let server = launcher
        .start(&spec, &log, Duration::from_secs(30), GRACE)
        .unwrap();
    server.stop().unwrap();
    assert_group_gone(logged_pid(&log));
}

#[test]
fn forking_server_that_ignores_sigterm_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let spec = fake_server(port, &["--ignore-term", "--workers", "3"]);
    let server = ProcessLauncher::new(infertune::engine::log_patterns())
        .spawn(
            &spec,
            &dir.path().join("server.log"),
            Duration::from_secs(30),
            GRACE,
        )
        .unwrap();
    let pgid = server.pgid();
    let members = infertune::launch::group::members(pgid);
    assert!(
        members.len() >= 4,
        "leader + workers expected, found {members:?}"
    );
    Box::new(server).stop().unwrap();
    assert_group_gone(pgid);
    assert!(!port::listening("127.0.0.1", port));
}

#[test]
fn dropping_a_server_without_stop_kills_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let spec = fake_server(free_port(), &["--ignore-term", "--workers", "1"]);
    let server = ProcessLauncher::new(infertune::engine::log_patterns())
        .spawn(
            &spec,
            &dir.path().join("server.log"),
            Duration::from_secs(30),
            GRACE,
        )
        .unwrap();
    let pgid = server.pgid();
    drop(server);
    assert_group_gone(pgid);
}

/// The classified failure of a child that replays `log_fixture` and exits 1; checks that
/// nothing of its process group survives.
fn replayed_failure(log_fixture: &str) -> StartFailure {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let spec = failing_child(log_fixture, "1", free_port());
    let failure = start_failure(&spec, &log, Duration::from_secs(30));
    assert_group_gone(logged_pid(&log));
    failure
}

#[test]
fn pydantic_value_error_is_invalid_config_with_the_root_cause() {
    let failure = replayed_failure("vllm_validation_error.log");
    assert_eq!(failure.kind, FailureKind::InvalidConfig);
    assert!(
        failure
            .message
            .starts_with("max_num_batched_tokens (512) is smaller than max_model_len (4096)."),
        "{}",
        failure.message
    );
    assert!(!failure.message.contains("[type="), "{}", failure.message);
}

#[test]
fn engine_core_value_error_wins_over_the_wrapper() {
    let failure = replayed_failure("vllm_engine_core_value_error.log");
    assert_eq!(failure.kind, FailureKind::InvalidConfig);
    assert_eq!(
        failure.message,
        "No common block size for 16 (CPU_ATTN: [MultipleOf(32)])"
    );
}

#[test]
fn oom_trace_is_oom() {
    let failure = replayed_failure("cuda_oom.log");
    assert_eq!(failure.kind, FailureKind::Oom);
    assert!(
        failure
            .message
            .starts_with("CUDA out of memory. Tried to allocate 2.00 GiB."),
        "{}",
        failure.message
    );
}

#[test]
fn never_ready_server_times_out_within_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let timeout = Duration::from_millis(1500);
    let started = Instant::now();
    let failure = start_failure(
        &fake_server(free_port(), &["--never-ready", "--ignore-term"]),
        &log,
        timeout,
    );
    let took = started.elapsed();
    assert_eq!(failure.kind, FailureKind::Timeout);
    assert!(
        failure.message.contains("GET /health answered 503"),
        "{}",
        failure.message
    );
    assert!(took >= timeout, "gave up early: {took:?}");
    assert!(
        took < timeout + GRACE + Duration::from_secs(5),
        "took {took:?}"
    );
    assert_group_gone(logged_pid(&log));
}

#[test]
fn wrong_served_model_name_times_out_saying_what_is_listed() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let failure = start_failure(
        &fake_server(free_port(), &["--model", "other"]),
        &log,
        Duration::from_secs(1),
    );
    assert_eq!(failure.kind, FailureKind::Timeout);
    assert!(
        failure
            .message
            .contains(r#"/v1/models lists ["other"], not "tiny""#),
        "{}",
        failure.message
    );
    assert_group_gone(logged_pid(&log));
}

#[test]
fn busy_port_is_refused_before_spawning() {
    let dir = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let log = dir.path().join("server.log");
    let failure = start_failure(&fake_server(port, &[]), &log, Duration::from_secs(5));
    assert_eq!(failure.kind, FailureKind::PortBusy);
    assert!(
        failure
            .message
            .contains(&format!("127.0.0.1:{port} is already in use")),
        "{}",
        failure.message
    );
    assert!(
        !log.exists(),
        "nothing may be spawned when the port is busy"
    );
}

#[test]
fn killed_by_a_signal_is_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let script = "echo pid $$; echo starting; kill -SEGV $$";
    let spec = spec(
        Path::new("/bin/bash"),
        &["-c", script],
        free_port(),
        ReadyRequest::Chat,
    );
    let failure = start_failure(&spec, &log, Duration::from_secs(30));
    assert_eq!(failure.kind, FailureKind::Crash);
    assert!(
        failure.message.starts_with("killed by SIGSEGV"),
        "{}",
        failure.message
    );
    assert_group_gone(logged_pid(&log));
}

#[test]
fn missing_program_says_how_to_fix_it() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(
        Path::new("no-such-engine-binary"),
        &[],
        free_port(),
        ReadyRequest::Chat,
    );
    let failure = start_failure(
        &spec,
        &dir.path().join("server.log"),
        Duration::from_secs(5),
    );
    assert_eq!(failure.kind, FailureKind::Unknown);
    assert!(
        failure.message.contains("is it installed and on PATH"),
        "{}",
        failure.message
    );
}

#[test]
fn files_are_written_before_the_spawn() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut spec = fake_server(port, &[]);
    let config = dir.path().join("conf/config.json");
    spec.files.push(infertune::launch::FileToWrite {
        path: config.clone(),
        contents: "{\"a\": 1}\n".into(),
    });
    let server = ProcessLauncher::new(infertune::engine::log_patterns())
        .spawn(
            &spec,
            &dir.path().join("server.log"),
            Duration::from_secs(30),
            GRACE,
        )
        .unwrap();
    let pgid = server.pgid();
    Box::new(server).stop().unwrap();
    assert_eq!(std::fs::read_to_string(&config).unwrap(), "{\"a\": 1}\n");
    assert_group_gone(pgid);
}

/// The value after `prefix` on the first log line that starts with it.
fn logged(log: &Path, prefix: &str) -> String {
    let text = std::fs::read_to_string(log).unwrap();
    let line = text.lines().find(|l| l.starts_with(prefix));
    line.unwrap_or_else(|| panic!("no `{prefix}` line in {text}"))[prefix.len()..]
        .trim()
        .to_string()
}

#[test]
fn a_servers_temporary_files_go_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let spec = fake_server(port, &["--leave-temp-files"]);
    let log = dir.path().join("trial-0/server.log");
    let server = ProcessLauncher::new(infertune::engine::log_patterns())
        .spawn(&spec, &log, Duration::from_secs(30), GRACE)
        .unwrap();
    let pgid = server.pgid();
    let scratch = std::path::PathBuf::from(logged(&log, "tmpdir "));
    assert_eq!(scratch.parent(), Some(std::env::temp_dir().as_path()));
    let name = scratch.file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with("infertune-"), "{scratch:?}");
    let left: Vec<_> = std::fs::read_dir(&scratch).unwrap().collect();
    assert_eq!(left.len(), 2, "the socket and the dist file: {left:?}");
    if std::env::var_os("TORCHINDUCTOR_CACHE_DIR").is_none() {
        let cache = logged(&log, "torch cache ");
        let usual = std::env::temp_dir().join("torchinductor_");
        assert!(
            cache.starts_with(usual.to_str().unwrap()),
            "torch's cache stays where it would have been: {cache}"
        );
    }
    Box::new(server).stop().unwrap();
    assert_group_gone(pgid);
    assert!(!scratch.exists(), "{scratch:?} is left behind");
}

#[test]
fn a_tmpdir_set_in_the_space_is_used_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let chosen = dir.path().join("tmp");
    std::fs::create_dir(&chosen).unwrap();
    let mut spec = fake_server(free_port(), &["--leave-temp-files"]);
    spec.env
        .insert("TMPDIR".into(), chosen.to_str().unwrap().to_string());
    let log = dir.path().join("server.log");
    let server = ProcessLauncher::new(infertune::engine::log_patterns())
        .spawn(&spec, &log, Duration::from_secs(30), GRACE)
        .unwrap();
    let pgid = server.pgid();
    assert_eq!(logged(&log, "tmpdir "), chosen.to_str().unwrap());
    Box::new(server).stop().unwrap();
    assert_group_gone(pgid);
    assert_eq!(std::fs::read_dir(&chosen).unwrap().count(), 2);
}
