//! Faults of a real Slurm cluster in the middle of a study (`scripts/provision-slurm.sh start`,
//! its `SLURM_CONF` exported): the node set DOWN under a running job, an administrator's
//! `scancel`, `slurmctld` restarted, and a job killed for its time limit. Each time the trial
//! runs again as a new job (or keeps its job through the restart), no trial is recorded as a
//! failure of its config, none is lost or journaled twice, and nothing is left in `squeue`.

use super::slurm_cluster::{cluster, jobs_left, space};
use crate::kit::e2e_sim_common::{
    records, tune, wait_no_processes_under, wait_while_running, STUDY,
};
use crate::kit::study_fakes::search_configs;
use infertune::record::{Outcome, TrialRecord};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Search trials asked.
const TRIALS: usize = 3;

/// A Slurm command that must succeed; its standard output.
fn slurm(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().unwrap();
    assert!(out.status.success(), "{program} {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The id of a running job of the study in `study`, once there is one.
fn running_job(study: &Path) -> Option<u64> {
    let comment = std::path::absolute(study).unwrap();
    let out = Command::new("squeue")
        .args([
            "-h",
            "-t",
            "R",
            "-n",
            &format!("infertune-{STUDY}"),
            "-o",
            "%i|%k",
        ])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout).lines().find_map(|l| {
        let (id, found) = l.split_once('|')?;
        (Path::new(found) == comment).then(|| id.parse().ok())?
    })
}

/// Runs a study of [`TRIALS`] trials of the Slurm space on ports from `port` and applies
/// `fault` to the first job that runs: see [`faulty_study`].
fn study_with_fault(port: u16, fault: impl FnOnce(u64)) -> (usize, Vec<TrialRecord>) {
    faulty_study(|dir| space(dir, port), fault)
}

/// Runs a study of [`TRIALS`] trials of the space `space` writes into a folder and applies
/// `fault` to the first job that runs: see [`Study::checked_end`].
fn faulty_study(
    space: impl FnOnce(&Path) -> PathBuf,
    fault: impl FnOnce(u64),
) -> (usize, Vec<TrialRecord>) {
    let mut study = Study::start(space);
    let job = std::cell::Cell::new(None);
    let ran = wait_while_running(&mut study.tuner, || {
        job.set(running_job(&study.dir));
        job.get().is_some()
    });
    assert!(ran, "no job of the study ever ran");
    fault(job.get().unwrap());
    study.checked_end()
}

/// What the tuner says of a trial whose jobs failed twice (`dispatch`).
const LOST: &str = "its job failed, not its config";

/// A study of [`TRIALS`] trials under way in a folder of its own.
struct Study {
    /// The results folder (removed with it).
    results: tempfile::TempDir,
    /// The study folder.
    dir: PathBuf,
    /// The tuner's standard error.
    log: PathBuf,
    tuner: std::process::Child,
}

impl Study {
    /// Starts the tuner on the space `space` writes into the results folder.
    fn start(space: impl FnOnce(&Path) -> PathBuf) -> Study {
        let results = tempfile::tempdir().unwrap();
        let space = space(results.path());
        let log = results.path().join("tune.log");
        let tuner = tune(&space, results.path(), &["--trials", &TRIALS.to_string()])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        Study {
            dir: results.path().join(STUDY),
            results,
            log,
            tuner,
        }
    }

    /// Waits for the tuner and checks what every fault must leave: the study succeeded with
    /// every trial, none given up, none journaled twice, none recorded as a failure of Slurm's, no job in
    /// `squeue` and no process left; the jobs submitted and the records.
    fn checked_end(mut self) -> (usize, Vec<TrialRecord>) {
        let status = self.tuner.wait().unwrap();
        let said = std::fs::read_to_string(&self.log).unwrap();
        assert!(status.success(), "{said}");
        assert!(!said.contains(LOST), "a trial's jobs were given up: {said}");
        let done = records(&self.dir);
        assert_eq!(search_configs(&done).len(), TRIALS, "{said}\n{done:#?}");
        let numbers: BTreeSet<u32> = done.iter().map(|r| r.id.number).collect();
        assert_eq!(numbers.len(), done.len(), "a trial was journaled twice");
        let blamed: Vec<&TrialRecord> = done
            .iter()
            .filter(|r| match &r.outcome {
                Outcome::Failed { message, .. } => message.contains("Slurm"),
                _ => false,
            })
            .collect();
        assert!(blamed.is_empty(), "a job's fault was recorded: {blamed:#?}");
        assert_eq!(jobs_left(&self.dir), Vec::<String>::new());
        let left = wait_no_processes_under(self.results.path(), 10.0);
        assert_eq!(left, Vec::<i32>::new());
        (jobs_submitted(&self.dir), done)
    }
}

/// The records of trials that ran as jobs.
fn ran_as_jobs(done: &[TrialRecord]) -> usize {
    done.iter().filter(|r| r.job_id.is_some()).count()
}

/// Waits (up to a minute) while `job` runs (it may be queued again after).
fn wait_job_stopped(job: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let out = Command::new("squeue")
            .args(["-h", "-j", &job.to_string(), "-o", "%t"])
            .output()
            .unwrap();
        let state = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if state != "R" {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The study's Slurm outputs: one per job submitted.
fn jobs_submitted(study: &Path) -> usize {
    std::fs::read_dir(study.join("slurm"))
        .map(|entries| entries.count())
        .unwrap_or(0)
}

/// The fault tests share the one cluster, and each either disrupts it for every job (a node
/// set DOWN requeues them, a stopped controller answers none) or needs its own job's fate (a
/// time limit, which a requeue would replace): they run one at a time. `None` (the test
/// skips) when no cluster is configured.
fn cluster_for_a_fault() -> Option<MutexGuard<'static, ()>> {
    static CLUSTER: Mutex<()> = Mutex::new(());
    cluster().then(|| {
        CLUSTER
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    })
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh, which starts one"]
fn a_job_cancelled_by_an_administrator_is_submitted_again() {
    let Some(_cluster) = cluster_for_a_fault() else {
        return;
    };
    let (submitted, done) = study_with_fault(18840, |job| {
        slurm("scancel", &[&job.to_string()]);
    });
    assert!(
        submitted > ran_as_jobs(&done),
        "the cancelled job was not submitted again"
    );
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh, which starts one"]
fn a_node_set_down_under_a_job_costs_a_resubmission_not_a_trial() {
    let Some(_cluster) = cluster_for_a_fault() else {
        return;
    };
    let node = slurm("sinfo", &["-h", "-o", "%N"]).trim().to_string();
    study_with_fault(18860, |job| {
        slurm(
            "scontrol",
            &[
                "update",
                &format!("nodename={node}"),
                "state=down",
                "reason=infertune-test",
            ],
        );
        wait_job_stopped(job);
        // With ReturnToService=2 the node may already be back; resume it otherwise.
        let _ = Command::new("scontrol")
            .args(["update", &format!("nodename={node}"), "state=resume"])
            .status();
        let deadline = Instant::now() + Duration::from_secs(60);
        while slurm("sinfo", &["-h", "-n", &node, "-o", "%t"]).contains("down")
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(500));
        }
    });
}

/// How long the controller stays down. Slurm's commands wait for an absent controller before
/// they fail (18 s measured on the test cluster: `MessageTimeout` 10 s and the retries to
/// connect), so a shorter outage never shows: the executor's `scontrol` only takes longer.
const CONTROLLER_OUTAGE: Duration = Duration::from_secs(25);

/// The controller stays down longer than Slurm's commands wait for it, so the executor's
/// `scontrol` calls fail meanwhile.
#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh, which starts one"]
fn a_controller_restarted_mid_study_keeps_its_jobs_and_loses_nothing() {
    let Some(_cluster) = cluster_for_a_fault() else {
        return;
    };
    let (submitted, done) = study_with_fault(18880, |_| {
        stop_controller();
        std::thread::sleep(CONTROLLER_OUTAGE);
        start_controller();
    });
    // A job kept through the restart is never submitted a second time.
    assert_eq!(submitted, ran_as_jobs(&done), "{done:#?}");
}

/// The controller is down while the study submits its first jobs (as it may be when a job
/// ends during a restart): `sbatch` fails, and keeps failing past its own wait, until the
/// controller is back. The trials wait for it rather than count it as a failed job.
#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh, which starts one"]
fn a_controller_down_while_jobs_are_submitted_costs_no_trial() {
    let Some(_cluster) = cluster_for_a_fault() else {
        return;
    };
    stop_controller();
    let study = Study::start(|dir| space(dir, 18920));
    // Longer than the study's first `squeue` and two `sbatch` in a row wait for it.
    std::thread::sleep(SUBMIT_OUTAGE);
    start_controller();
    let (submitted, done) = study.checked_end();
    assert_eq!(submitted, ran_as_jobs(&done), "{done:#?}");
}

/// How long the controller is down while the study submits: longer than one `squeue` (18 s)
/// and two `sbatch` (9 s each, measured) wait for it.
const SUBMIT_OUTAGE: Duration = Duration::from_secs(45);

/// Stops the cluster's `slurmctld` (SIGTERM; its jobs keep running) and waits until it is gone.
fn stop_controller() {
    let conf = PathBuf::from(std::env::var_os("SLURM_CONF").unwrap());
    let pid: i32 = std::fs::read_to_string(conf.with_file_name("slurmctld.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let pid = nix::unistd::Pid::from_raw(pid);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while nix::sys::signal::kill(pid, None).is_ok() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Starts the cluster's `slurmctld` again; it recovers its jobs from its saved state.
fn start_controller() {
    let conf = std::env::var("SLURM_CONF").unwrap();
    slurm("slurmctld", &["-f", &conf]);
}

/// The job's time limit is a setting of the cluster's queue (the executor section's `time`),
/// not a fault of the config being tried: Slurm ends the job `TIMEOUT`, which the executor
/// counts against the job, as it counts a node failure or a cancel (`exec::slurm`'s states).
/// So the trial is submitted again and recorded once, never as a failure of its config; only
/// jobs failing again and again stop the study, with a message that points at the cluster and
/// the executor section. Slurm keeps limits in whole minutes and `slurmctld` checks them every
/// 30 s (a constant of its code, no setting), so the jobs ask `--time=10`, the first running
/// job's end is moved two seconds ahead (`scontrol update EndTime=now+2`), and each trial's
/// server takes 45 s to start, outliving that check. The test cluster's config is unchanged
/// (`OverTimeLimit` 0 and `KillWait` 30 s, Slurm's defaults).
#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh, which starts one"]
fn a_job_past_its_time_limit_is_submitted_again_not_blamed_on_its_config() {
    let Some(_cluster) = cluster_for_a_fault() else {
        return;
    };
    let slow_space = |dir: &Path| {
        let path = space(dir, 18900);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"4s\"") && text.contains("ready_timeout: 20s"));
        let slow = text
            .replace("\"4s\"", "\"450s\"")
            .replace("ready_timeout: 20s", "ready_timeout: 120s");
        std::fs::write(&path, format!("{slow}  time: \"10\"\n")).unwrap();
        path
    };
    let mut ended = String::new();
    let (submitted, done) = faulty_study(slow_space, |job| {
        slurm(
            "scontrol",
            &["update", &format!("jobid={job}"), "endtime=now+2"],
        );
        ended = final_state(job);
    });
    assert!(
        ended.starts_with("TIMEOUT"),
        "the job was not killed for its time limit: {ended}"
    );
    assert!(
        submitted > ran_as_jobs(&done),
        "the job killed for its time limit was not submitted again: {done:#?}"
    );
}

/// The state `job` ends in (`scontrol` keeps an ended job for `MinJobAge`), waiting up to
/// 90 s: `JobState=… Reason=…`, or the last state seen.
fn final_state(job: u64) -> String {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let text = slurm("scontrol", &["show", "job", "-o", &job.to_string()]);
        let state: Vec<&str> = text
            .split_whitespace()
            .filter_map(|w| w.strip_prefix("JobState=").or(w.strip_prefix("Reason=")))
            .collect();
        let state = state.join(" ");
        let active = ["PENDING", "RUNNING", "COMPLETING", "CONFIGURING"];
        if !active.iter().any(|a| state.starts_with(a)) || Instant::now() >= deadline {
            return state;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
