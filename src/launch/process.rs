//! The real launcher: spawns a server in its own process group, marked so that every process it
//! starts can be found (see [`tree`](super::tree)), waits until it serves, classifies failures,
//! and tears the whole tree down.

use super::classify::{self, classify, diagnose, LogPatterns};
use super::gate::{self, GateError};
use super::readiness::{wait_ready, WaitEnd};
use super::scratch::Scratch;
use super::teardown::{stop_all, teardown};
use super::this_exe;
use super::tree::{Proc, Tree, MARKER_VAR};
use super::{leftover, port, Exit, LaunchSpec, Launcher, Server, StartFailure};
use crate::record::FailureKind;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How much of the end of a server log is scanned to classify a failure.
const LOG_TAIL: u64 = 1 << 20;

/// Receives the supervisor's warnings, e.g. a process group it could not record.
type WarningSink = Arc<dyn Fn(&str) + Send + Sync>;

/// Spawns real processes. Each server runs in a new process group that is killed as a whole.
#[derive(Clone)]
pub struct ProcessLauncher {
    cancel: Arc<AtomicBool>,
    warnings: Option<WarningSink>,
    log_patterns: &'static [&'static LogPatterns],
}

impl std::fmt::Debug for ProcessLauncher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessLauncher")
            .field("cancel", &self.cancel)
            .field("warnings", &self.warnings.is_some())
            .finish()
    }
}

impl ProcessLauncher {
    /// A launcher with its own cancel flag, reading a failed server's log with `log_patterns`
    /// (the engine layer's `engine::log_patterns`).
    pub fn new(log_patterns: &'static [&'static LogPatterns]) -> Self {
        ProcessLauncher {
            cancel: Arc::default(),
            warnings: None,
            log_patterns,
        }
    }

    /// This launcher, handing its warnings to `sink` (without it they are dropped).
    pub(crate) fn on_warning(mut self, sink: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.warnings = Some(Arc::new(sink));
        self
    }

    /// The flag that abandons a start in progress when raised (e.g. from a Ctrl-C handler):
    /// the server is torn down and the start fails.
    pub(crate) fn cancel_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.cancel)
    }

    /// Like [`Launcher::start`], returning the concrete server (its process group is visible).
    pub fn spawn(
        &self,
        spec: &LaunchSpec,
        log_path: &Path,
        ready_timeout: Duration,
        stop_grace: Duration,
    ) -> Result<ProcessServer, StartFailure> {
        let started = Instant::now();
        if spec.readiness.https {
            return Err(fail(
                FailureKind::InvalidConfig,
                "the server is set to serve https (MindIE ServerConfig.httpsEnabled), but readiness \
                 checks and probes speak plain http; set httpsEnabled to false in the config template"
                    .into(),
            ));
        }
        if port::in_use(&spec.host, spec.port) {
            return Err(fail(
                FailureKind::PortBusy,
                format!(
                    "{} is already in use by another process; stop it or choose another port",
                    port::authority(&spec.host, spec.port)
                ),
            ));
        }
        let scratch = Scratch::for_server(&spec.env)
            .map_err(|e| fail(FailureKind::Unknown, e.to_string()))?;
        let marker = Tree::new_marker();
        let record_path = leftover::record_path(log_path);
        let mut record = leftover::GroupRecord::before_spawn(
            marker.clone(),
            scratch.as_ref().map(|s| s.path().to_path_buf()),
        );
        // Written between the fork and the exec: the server never runs unrecorded.
        let recorded = |pid| record_group(pid, &record_path, &mut record);
        let child = match start_process(spec, log_path, scratch.as_ref(), &marker, recorded) {
            Ok(child) => child,
            Err(message) => {
                let _ = std::fs::remove_file(&record_path);
                if let Some(scratch) = scratch {
                    scratch.remove();
                }
                return Err(fail(FailureKind::Unknown, message));
            }
        };
        let pgid = child.id() as i32;
        let leader = Proc::of_running(pgid).into_iter().collect();
        let mut server = ProcessServer {
            pgid,
            child,
            tree: Tree::new(Some(marker), leader),
            record: Some((record_path, record)),
            scratch,
            log: log_path.to_path_buf(),
            log_patterns: self.log_patterns,
            host: spec.host.clone(),
            port: spec.port,
            ready_after: Duration::ZERO,
            stop_grace,
            stopped: false,
        };
        let outcome = wait_ready(
            &mut server.child,
            &mut server.tree,
            spec,
            started + ready_timeout,
            &self.cancel,
        );
        let failure = match outcome {
            Ok(WaitEnd::Ready) => {
                server.ready_after = started.elapsed();
                if let (Err(e), Some(warn)) = (server.record_tree(), &self.warnings) {
                    warn(&format!(
                        "cannot add the processes of server group {} to its record: {e}; \
                         should this tuner be killed, its marker still finds them",
                        server.pgid
                    ));
                }
                return Ok(server);
            }
            Ok(WaitEnd::Foreign(message)) => {
                let torn = server.shut_down();
                with_teardown(fail(FailureKind::PortBusy, message), torn)
            }
            Ok(WaitEnd::Exited(status)) => {
                let torn = server.shut_down();
                let log = read_tail(log_path);
                with_teardown(classify(status.into(), &log, self.log_patterns), torn)
            }
            Ok(WaitEnd::TimedOut(last)) => {
                let torn = server.shut_down();
                let failure = match diagnose(&read_tail(log_path), self.log_patterns) {
                    Some(mut f) => {
                        f.message.push_str(" (the server hung after this error)");
                        f
                    }
                    None => fail(
                        FailureKind::Timeout,
                        format!(
                            "not ready after {}; last check: {last}",
                            humantime::format_duration(ready_timeout)
                        ),
                    ),
                };
                with_teardown(failure, torn)
            }
            Ok(WaitEnd::Cancelled) => {
                let torn = server.shut_down();
                with_teardown(fail(FailureKind::Unknown, "start interrupted".into()), torn)
            }
            Err(e) => {
                let torn = server.shut_down();
                let message = format!("cannot wait for readiness: {e}");
                with_teardown(fail(FailureKind::Unknown, message), torn)
            }
        };
        Err(failure)
    }
}

impl Launcher for ProcessLauncher {
    fn start(
        &self,
        spec: &LaunchSpec,
        log_path: &Path,
        ready_timeout: Duration,
        stop_grace: Duration,
    ) -> Result<Box<dyn Server>, StartFailure> {
        let server = self.spawn(spec, log_path, ready_timeout, stop_grace)?;
        Ok(Box::new(server))
    }
}

/// Record the group led by `pid` (forked, not yet exec'd) in `record`, written at `path`, so
/// that a later run can stop it and remove its temporary folder should this tuner die before
/// its teardown.
fn record_group(pid: i32, path: &Path, record: &mut leftover::GroupRecord) -> Result<(), String> {
    let running = leftover::GroupRecord::of_running(pid)
        .ok_or_else(|| format!("the server's process {pid} vanished before its start"))?;
    record.pgid = running.pgid;
    record.start_ticks = running.start_ticks;
    leftover::write(path, record).map_err(|e| {
        format!(
            "cannot record the server in {}: {e}; it was not started",
            path.display()
        )
    })
}

fn fail(kind: FailureKind, message: String) -> StartFailure {
    StartFailure { kind, message }
}

fn with_teardown(mut failure: StartFailure, torn: anyhow::Result<()>) -> StartFailure {
    if let Err(e) = torn {
        failure.message.push_str(&format!("; teardown: {e:#}"));
    }
    failure
}

/// Write the spec's files, open the log, and spawn the program in a new process group with
/// its own temporary folder and `marker` in its environment; `record` runs between the fork and
/// the exec (see [`gate`](super::gate)).
fn start_process(
    spec: &LaunchSpec,
    log_path: &Path,
    scratch: Option<&Scratch>,
    marker: &str,
    record: impl FnOnce(i32) -> Result<(), String> + Send,
) -> Result<Child, String> {
    for file in &spec.files {
        write_private(&file.path, &file.contents)
            .map_err(|e| format!("cannot write {}: {e}", file.path.display()))?;
    }
    if let Some(dir) = log_path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create the log folder {}: {e}", dir.display()))?;
    }
    let log = File::create(log_path)
        .map_err(|e| format!("cannot create the server log {}: {e}", log_path.display()))?;
    let log_err = log
        .try_clone()
        .map_err(|e| format!("cannot share the server log {}: {e}", log_path.display()))?;
    let mut command = Command::new(this_exe::file_to_run(&spec.program));
    command
        .arg0(&spec.program)
        .args(&spec.args)
        .envs(&spec.env)
        .envs(scratch.map(|s| s.env(&spec.env)).unwrap_or_default())
        .env(MARKER_VAR, marker)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .process_group(0);
    if let Some(cwd) = &spec.cwd {
        std::fs::create_dir_all(cwd)
            .map_err(|e| format!("cannot create the working folder {}: {e}", cwd.display()))?;
        command.current_dir(cwd);
    }
    gate::spawn(&mut command, record).map_err(|e| match e {
        GateError::Record(why) => why,
        GateError::Spawn(e) => {
            let hint = if e.kind() == std::io::ErrorKind::NotFound {
                "; is it installed and on PATH? (or set launch.command to its full path)"
            } else {
                ""
            };
            format!("cannot start `{}`: {e}{hint}", spec.program)
        }
    })
}

/// Write `contents` to `path` readable by owner and group only (MindIE refuses looser configs).
fn write_private(path: &Path, contents: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o640)
        .open(path)?;
    file.write_all(contents.as_bytes())
}

/// The last [`LOG_TAIL`] bytes of the log (empty when unreadable).
fn read_tail(path: &Path) -> String {
    let mut bytes = Vec::new();
    if let Ok(mut file) = File::open(path) {
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        let _ = file.seek(SeekFrom::Start(len.saturating_sub(LOG_TAIL)));
        let _ = file.read_to_end(&mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A server started by [`ProcessLauncher`]. Dropping it without [`Server::stop`] kills its
/// whole process group and every process of its tree.
#[derive(Debug)]
pub struct ProcessServer {
    child: Child,
    pgid: i32,
    /// Every process of the server, those that left the group included.
    tree: Tree,
    /// The server's record in the trial folder (see [`leftover`]), removed once it is gone.
    record: Option<(PathBuf, leftover::GroupRecord)>,
    /// The server's temporary folder (unless the space chose one), removed once the group
    /// is gone.
    scratch: Option<Scratch>,
    /// The server log, read for the root cause should the server exit.
    log: PathBuf,
    /// What marks a failure in the log.
    log_patterns: &'static [&'static LogPatterns],
    host: String,
    port: u16,
    ready_after: Duration,
    stop_grace: Duration,
    stopped: bool,
}

impl ProcessServer {
    /// The process group id (= the pid of the spawned program).
    pub fn pgid(&self) -> i32 {
        self.pgid
    }

    /// Full teardown; marks the server stopped when it succeeds.
    fn shut_down(&mut self) -> anyhow::Result<()> {
        teardown(
            &mut self.child,
            self.pgid,
            &mut self.tree,
            self.stop_grace,
            &self.host,
            self.port,
        )?;
        self.stopped = true;
        self.forget_group();
        Ok(())
    }

    /// Add every process of the tree to the record, so that a later run finds them all. Should
    /// the update fail, the record written at the spawn still names the server's marker, which
    /// finds them too.
    fn record_tree(&mut self) -> std::io::Result<()> {
        match &mut self.record {
            Some((path, record)) => {
                record.descendants = self.tree.refresh();
                leftover::write(path, record)
            }
            None => Ok(()),
        }
    }

    /// Remove the server's record and temporary folder: its processes are gone.
    fn forget_group(&mut self) {
        if let Some(scratch) = self.scratch.take() {
            scratch.remove();
        }
        if let Some((path, _)) = self.record.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Server for ProcessServer {
    fn base_url(&self) -> String {
        format!("http://{}", port::authority(&self.host, self.port))
    }

    fn ready_after(&self) -> Duration {
        self.ready_after
    }

    fn exited(&mut self) -> Option<Exit> {
        let status = self.child.try_wait().ok()??;
        let log = read_tail(&self.log);
        Some(classify::exit(status.into(), &log, self.log_patterns))
    }

    fn stop(mut self: Box<Self>) -> anyhow::Result<()> {
        self.shut_down()
    }
}

impl Drop for ProcessServer {
    fn drop(&mut self) {
        if !self.stopped {
            let gone = stop_all(
                Some(self.pgid),
                &mut self.tree,
                Some(&mut self.child),
                Duration::ZERO,
            );
            let _ = self.child.wait();
            if gone.is_ok() {
                self.forget_group();
            }
        }
    }
}
