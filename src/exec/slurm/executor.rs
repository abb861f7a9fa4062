//! Trials as Slurm jobs. The tuner submits one job per trial running `infertune trial run` on
//! the allocated node (server and probe local to each other); the job writes the trial's
//! record into the study folder (a shared filesystem) and the tuner journals it. A failed job
//! is submitted once more; twice failed, the trial is lost, never counted against its config.

use super::jobs::{self as slurm, JobRequest, JobState};
use crate::exec::backends::Backends;
use crate::exec::devices::DevicePool;
use crate::exec::executor::{Assignment, TrialExecutor, TrialRun};
use crate::exec::interrupt::StopFlag;
use crate::exec::local::{EarlyStops, LocalExecutor};
use crate::exec::pending;
use crate::exec::trial_dir::TrialDir;
use crate::record::{InFlight, TrialRecord};
use crate::space::StudySpec;
use crate::util::atomic::{write_atomic, Access};
use crate::util::unix_now;
use anyhow::Context as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Metric name of the seconds from `sbatch` to the trial starting on its node: what Slurm adds.
const JOB_START_S: &str = "job_start_s";

/// How long a study waits for the leftover jobs it cancelled to end (Slurm's default
/// `KillWait` is 30 s).
const LEFTOVER_END_TIMEOUT: Duration = Duration::from_secs(90);

/// How long the controller may go unanswered (a `slurmctld` restart) before a job being
/// submitted or in flight is given up as failed.
const CONTROLLER_PATIENCE: Duration = Duration::from_secs(120);

/// How a study submits its jobs.
#[derive(Clone, Debug)]
pub struct Jobs {
    /// Job name: carries the study's name.
    pub name: String,
    /// Job comment: the study folder (absolute), so a resume finds exactly its jobs.
    pub comment: String,
    /// The space file (absolute), read by each job.
    pub space_file: PathBuf,
    /// The study folder (absolute).
    pub dir: PathBuf,
    /// `sbatch` options of the space's `executor:` section.
    pub options: Vec<String>,
    /// What may stop a job's probe early, as the study was told.
    pub early: EarlyStops,
}

impl Jobs {
    /// The jobs of the study of `space` in `dir`, their probes stopped early as `early` says.
    pub fn of(space: &StudySpec, dir: &Path, early: EarlyStops) -> anyhow::Result<Jobs> {
        let dir = std::path::absolute(dir)?;
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(Jobs {
            name: format!("infertune-{name}"),
            comment: dir.to_string_lossy().into_owned(),
            space_file: std::path::absolute(&space.origin)?,
            dir,
            options: space.executor.sbatch_options(),
            early,
        })
    }

    /// Cancel the jobs an earlier run of the study left queued or running, and wait for them to
    /// end, so none still writes into a trial folder the study reuses; one line each.
    pub fn cancel_leftovers(&self) -> Vec<String> {
        let ids = match slurm::find(&self.name, &self.comment) {
            Ok(ids) => ids,
            Err(e) => return vec![format!("cannot list the study's Slurm jobs: {e}")],
        };
        let mut notes = Vec::new();
        let mut cancelled = Vec::new();
        for id in ids {
            match slurm::cancel(id) {
                Ok(()) => {
                    notes.push(format!(
                        "cancelled Slurm job {id}, left by an earlier run of the study"
                    ));
                    cancelled.push(id);
                }
                Err(e) => notes.push(format!("cannot cancel Slurm job {id}: {e}")),
            }
        }
        let still = slurm::wait_ended(&cancelled, LEFTOVER_END_TIMEOUT);
        if !still.is_empty() {
            notes.push(format!(
                "Slurm jobs {still:?} were still ending {} s after their cancel; \
                 check them with `squeue` if a trial folder cannot be cleared",
                LEFTOVER_END_TIMEOUT.as_secs()
            ));
        }
        notes
    }

    /// Run `in_flight` as a job (twice at most when the job itself fails); `stop` cancels it.
    fn run(
        &self,
        stop: &StopFlag,
        in_flight: &InFlight,
        assignment: &Assignment,
    ) -> anyhow::Result<TrialRun> {
        let number = in_flight.id.number;
        let trial = TrialDir::of(&self.dir, number);
        trial.create_fresh()?;
        std::fs::create_dir_all(trial.job_outputs())?;
        pending::write(&trial, in_flight)?;
        let mut failures = Vec::new();
        for attempt in 1..=2 {
            match self.one_job(stop, &trial, number, assignment, attempt)? {
                JobEnd::Record(mut record, job, submitted_unix) => {
                    record.slot = Some(assignment.slot);
                    record.job_id = Some(job);
                    record
                        .metrics
                        .insert(JOB_START_S.into(), record.started_unix - submitted_unix);
                    return Ok(TrialRun::Done(record));
                }
                JobEnd::Interrupted => return Ok(TrialRun::Interrupted),
                JobEnd::Failed(why) => failures.push(why),
            }
        }
        Ok(TrialRun::Lost(failures.join("; submitted again: ")))
    }

    /// The job's command: `exe trial run` of trial `number` on `slot`, with the study's early
    /// stops.
    fn command(&self, exe: &Path, number: u32, slot: u32) -> Vec<String> {
        let mut command: Vec<String> = [
            exe.to_string_lossy().as_ref(),
            "trial",
            "run",
            "--space",
            &self.space_file.to_string_lossy(),
            "--dir",
            &self.dir.to_string_lossy(),
            "--number",
            &number.to_string(),
            "--slot",
            &slot.to_string(),
        ]
        .map(String::from)
        .to_vec();
        command.extend(self.early.flags().into_iter().map(String::from));
        command
    }

    fn one_job(
        &self,
        stop: &StopFlag,
        trial: &TrialDir,
        number: u32,
        assignment: &Assignment,
        attempt: u32,
    ) -> anyhow::Result<JobEnd> {
        let exe =
            crate::launch::this_exe::path().context("cannot locate the infertune executable")?;
        let command = self.command(&exe, number, assignment.slot);
        let output = trial.job_output(attempt);
        let record_path = trial.job_record();
        let _ = std::fs::remove_file(&record_path);
        let submitted_unix = unix_now();
        let request = JobRequest {
            name: &self.name,
            comment: &self.comment,
            output: &output.to_string_lossy(),
            options: &self.options,
            command: &command,
        };
        let job = match submit(stop, &request) {
            Ok(job) => job,
            Err(end) => return Ok(end),
        };
        let mut unanswered_since = None;
        loop {
            if stop.is_raised() {
                cancel_and_wait(job);
                return Ok(JobEnd::Interrupted);
            }
            match slurm::state(job) {
                Ok(JobState::Active) => {
                    unanswered_since = None;
                    std::thread::sleep(Duration::from_millis(200));
                }
                Ok(JobState::Completed | JobState::Gone) => break,
                Ok(JobState::Failed(why)) => return Ok(JobEnd::Failed(why)),
                // A controller restarting keeps its jobs running: ask again, and give the job
                // up (cancelled, so it never runs beside its resubmission) only after a while.
                Err(e) => {
                    let since = *unanswered_since.get_or_insert_with(Instant::now);
                    if since.elapsed() >= CONTROLLER_PATIENCE {
                        cancel_and_wait(job);
                        return Ok(unanswered(&e));
                    }
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
        }
        match std::fs::read_to_string(&record_path) {
            Ok(text) => Ok(JobEnd::Record(
                Box::new(serde_json::from_str(&text).with_context(|| {
                    format!("the record {} is not valid", record_path.display())
                })?),
                job,
                submitted_unix,
            )),
            Err(_) => Ok(JobEnd::Failed(format!(
                "Slurm job {job} ended without a record (is the study folder on a filesystem \
                 the node shares?); its output: {}",
                output.display()
            ))),
        }
    }
}

enum JobEnd {
    /// The job's record, its id and when it was submitted (Unix seconds).
    Record(Box<TrialRecord>, u64, f64),
    Interrupted,
    Failed(String),
}

/// Submit `request`. A controller that does not answer (a restart) has refused nothing: ask
/// again for up to [`CONTROLLER_PATIENCE`]. How the job ended otherwise.
fn submit(stop: &StopFlag, request: &JobRequest<'_>) -> Result<u64, JobEnd> {
    let asked = Instant::now();
    loop {
        match slurm::submit(request) {
            Ok(job) => return Ok(job),
            Err(why) if slurm::unanswered(&why) => {
                if asked.elapsed() >= CONTROLLER_PATIENCE {
                    return Err(unanswered(&why));
                }
                if stop.is_raised() {
                    return Err(JobEnd::Interrupted);
                }
                std::thread::sleep(Duration::from_secs(1));
            }
            Err(why) => return Err(JobEnd::Failed(format!("sbatch refused the job: {why}"))),
        }
    }
}

/// The end of a job whose controller stayed silent for [`CONTROLLER_PATIENCE`].
fn unanswered(why: &str) -> JobEnd {
    JobEnd::Failed(format!(
        "Slurm did not answer for {}: {why}",
        humantime::format_duration(CONTROLLER_PATIENCE)
    ))
}

/// Cancel `job` and wait (up to a minute) until Slurm reports it ended.
fn cancel_and_wait(job: u64) {
    let _ = slurm::cancel(job);
    slurm::wait_ended(&[job], Duration::from_secs(60));
}

/// Trials as Slurm jobs, up to `slots` queued or running at once.
pub struct SlurmExecutor {
    jobs: Jobs,
    slots: u32,
    stop: StopFlag,
}

impl SlurmExecutor {
    /// Submits `jobs`, `slots` at once (at least one); `stop` cancels the running ones.
    pub fn new(jobs: Jobs, slots: u32, stop: StopFlag) -> SlurmExecutor {
        SlurmExecutor {
            jobs,
            slots: slots.max(1),
            stop,
        }
    }
}

impl TrialExecutor for SlurmExecutor {
    fn slots(&self) -> u32 {
        self.slots
    }

    fn device_pool(&self) -> DevicePool {
        // Slurm assigns each job its devices.
        DevicePool::new(Vec::new())
    }

    fn run(&self, in_flight: InFlight, assignment: &Assignment) -> anyhow::Result<TrialRun> {
        self.jobs.run(&self.stop, &in_flight, assignment)
    }

    fn finished_record(&self, trial: &TrialDir) -> Option<TrialRecord> {
        let text = std::fs::read_to_string(trial.job_record()).ok()?;
        serde_json::from_str(&text).ok()
    }
}

/// Inside a Slurm job: run trial `number` of the study in `dir` (marked in flight there by the
/// tuner) on the devices Slurm gave the job, its probe stopped early as `early` says, and write
/// its record for the tuner to journal.
pub fn run_in_job(
    space: &StudySpec,
    backends: Backends<'_>,
    dir: &Path,
    (number, slot): (u32, u32),
    stop: StopFlag,
    early: EarlyStops,
) -> anyhow::Result<bool> {
    let trial = TrialDir::of(dir, number);
    let mut in_flight = pending::read(&trial)?;
    let objective = crate::exec::objective(space)?;
    // One trial, unpinned: a job's node computed its own `numa: auto` candidates when it
    // loaded the space, and Slurm gave the job its devices.
    let executor = LocalExecutor::new(space, backends, &objective, dir, stop, early);
    in_flight.id.number = number;
    let assignment = Assignment {
        slot,
        devices: slurm::job_devices(),
    };
    match executor.run(in_flight, &assignment)? {
        TrialRun::Done(record) => {
            let record = crate::space::redact::record(*record, &space.secrets);
            write_atomic(
                &trial.job_record(),
                &serde_json::to_string(&record)?,
                Access::Owner,
            )?;
            Ok(true)
        }
        TrialRun::Interrupted | TrialRun::Lost(_) => Ok(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jobs(early: EarlyStops) -> Jobs {
        Jobs {
            name: "infertune-s".into(),
            comment: "/r/s".into(),
            space_file: "/r/space.yaml".into(),
            dir: "/r/s".into(),
            options: Vec::new(),
            early,
        }
    }

    #[test]
    fn a_job_prunes_only_as_the_study_was_told() {
        let exe = Path::new("/bin/infertune");
        let both = EarlyStops {
            slo: true,
            server: true,
        };
        let command = jobs(both).command(exe, 7, 1);
        assert!(
            !command.iter().any(|a| a.starts_with("--no-")),
            "{command:?}"
        );
        let unpruned = EarlyStops { slo: false, ..both };
        let command = jobs(unpruned).command(exe, 7, 1);
        assert_eq!(command.last().map(String::as_str), Some("--no-prune"));
        assert!(!command.contains(&"--no-server-stop".to_string()));
        let neither = EarlyStops {
            slo: false,
            server: false,
        };
        assert_eq!(neither.flags(), ["--no-prune", "--no-server-stop"]);
    }
}
