//! Slurm jobs: submit one per trial (`sbatch`), follow it (`scontrol`), cancel it (`scancel`),
//! find a study's jobs again (`squeue`), tell a failed *job* (node failure, time limit,
//! preemption, cancelled, refused) from a trial's own outcome, and, inside a job, the devices
//! Slurm gave it.

use crate::util::process::run_with_timeout;
use std::time::Duration;

/// How long one Slurm command may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// Where a job stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobState {
    /// Queued or running.
    Active,
    /// Ended with exit status 0.
    Completed,
    /// Ended otherwise: the job failed, not (necessarily) the trial; the state and reason.
    Failed(String),
    /// Slurm no longer knows it.
    Gone,
}

/// A job to submit.
pub struct JobRequest<'a> {
    /// `--job-name`: carries the study, so a resumed study finds its jobs.
    pub name: &'a str,
    /// `--comment`: the study folder, told apart from another study of the same name.
    pub comment: &'a str,
    /// `--output` file.
    pub output: &'a str,
    /// Options from the space's `executor:` section.
    pub options: &'a [String],
    /// The command the job runs, word by word.
    pub command: &'a [String],
}

fn slurm(program: &str, args: &[&str]) -> Result<String, String> {
    let out = run_with_timeout(program, args, COMMAND_TIMEOUT)
        .map_err(|e| format!("{e}; is Slurm installed and SLURM_CONF set?"))?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(format!(
            "{program} {}: {}",
            args.join(" "),
            out.stderr.trim().lines().last().unwrap_or("failed")
        ))
    }
}

/// What Slurm's commands say when no controller answers them.
const NO_CONTROLLER: &str = "Unable to contact slurm controller";

/// True when `error`, of a Slurm command here, says that no controller answered (`slurmctld`
/// down or restarting): the request was not refused, it may be made again.
pub fn unanswered(error: &str) -> bool {
    error.contains(NO_CONTROLLER)
}

/// Submit `job`; its id, or why `sbatch` refused it.
pub fn submit(job: &JobRequest<'_>) -> Result<u64, String> {
    let wrap = shlex::try_join(job.command.iter().map(String::as_str))
        .map_err(|e| format!("cannot quote the job's command: {e}"))?;
    let mut args: Vec<String> = vec![
        "--parsable".into(),
        format!("--job-name={}", job.name),
        format!("--comment={}", job.comment),
        format!("--output={}", job.output),
    ];
    args.extend(job.options.iter().cloned());
    args.push(format!("--wrap={wrap}"));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = slurm("sbatch", &args)?;
    let id = out.trim().split(';').next().unwrap_or_default();
    id.parse()
        .map_err(|_| format!("sbatch answered `{}`, not a job id", out.trim()))
}

/// The state of job `id`.
pub fn state(id: u64) -> Result<JobState, String> {
    let id = id.to_string();
    let text = match slurm("scontrol", &["show", "job", "-o", &id]) {
        Ok(text) => text,
        Err(e) if e.contains("Invalid job id") => return Ok(JobState::Gone),
        Err(e) => return Err(e),
    };
    Ok(parse_state(&text))
}

/// The state in `scontrol show job -o` output.
fn parse_state(text: &str) -> JobState {
    let field = |key: &str| {
        text.split_whitespace()
            .find_map(|w| w.strip_prefix(key))
            .unwrap_or_default()
            .to_string()
    };
    let state = field("JobState=");
    match state.as_str() {
        "" => JobState::Gone,
        "PENDING" | "RUNNING" | "CONFIGURING" | "COMPLETING" | "SUSPENDED" | "REQUEUED"
        | "RESIZING" | "SIGNALING" | "STAGE_OUT" => JobState::Active,
        "COMPLETED" => JobState::Completed,
        _ => JobState::Failed(format!(
            "Slurm job {}: {state} (reason {}, exit {})",
            field("JobId="),
            field("Reason="),
            field("ExitCode=")
        )),
    }
}

/// Cancel job `id` (its steps and processes with it).
pub fn cancel(id: u64) -> Result<(), String> {
    slurm("scancel", &[&id.to_string()]).map(|_| ())
}

/// Waits until none of `ids` is queued, running or completing (a cancelled job's processes
/// may take Slurm's `KillWait` to stop), at most `timeout`; the ids still active then.
pub fn wait_ended(ids: &[u64], timeout: Duration) -> Vec<u64> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let active: Vec<u64> = ids
            .iter()
            .copied()
            .filter(|&id| state(id) == Ok(JobState::Active))
            .collect();
        if active.is_empty() || std::time::Instant::now() >= deadline {
            return active;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Jobs queued or running named `name` whose comment is `comment`.
pub fn find(name: &str, comment: &str) -> Result<Vec<u64>, String> {
    let out = slurm("squeue", &["-h", "-n", name, "-o", "%i|%k"])?;
    Ok(out
        .lines()
        .filter_map(|line| {
            let (id, found) = line.trim().split_once('|')?;
            (found == comment).then(|| id.parse().ok()).flatten()
        })
        .collect())
}

/// Inside a job: the accelerator indices Slurm gave it, from `SLURM_STEP_GPUS`,
/// `SLURM_JOB_GPUS`, `CUDA_VISIBLE_DEVICES` or `ASCEND_RT_VISIBLE_DEVICES`, else from the
/// job's `GRES=gpu:N(IDX:…)` in `scontrol show job -d` (Slurm sets no variable for GPUs of a
/// gres file without a vendor plugin). Empty when the job holds none.
pub fn job_devices() -> Vec<u32> {
    let vars = [
        "SLURM_STEP_GPUS",
        "SLURM_JOB_GPUS",
        "CUDA_VISIBLE_DEVICES",
        "ASCEND_RT_VISIBLE_DEVICES",
    ];
    if let Some(list) = vars.iter().find_map(|v| std::env::var(v).ok()) {
        return parse_indices(&list);
    }
    let Ok(id) = std::env::var("SLURM_JOB_ID") else {
        return Vec::new();
    };
    slurm("scontrol", &["show", "job", "-d", &id])
        .map(|text| gres_indices(&text))
        .unwrap_or_default()
}

/// `IDX:0-1,3` of the first `GRES=` field.
fn gres_indices(text: &str) -> Vec<u32> {
    text.split_whitespace()
        .filter(|w| w.starts_with("GRES="))
        .find_map(|w| {
            let list = w.split("IDX:").nth(1)?;
            Some(parse_indices(list.trim_end_matches(')')))
        })
        .unwrap_or_default()
}

/// `0-1,3` → `[0, 1, 3]`.
fn parse_indices(list: &str) -> Vec<u32> {
    list.split(',')
        .filter_map(|part| match part.trim().split_once('-') {
            Some((a, b)) => Some((a.parse().ok()?..=b.parse().ok()?).collect::<Vec<u32>>()),
            None => part.trim().parse().ok().map(|n| vec![n]),
        })
        .flatten()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_tell_job_failures_apart() {
        assert_eq!(
            parse_state("JobId=3 JobState=RUNNING Reason=None"),
            JobState::Active
        );
        assert_eq!(
            parse_state("JobId=3 JobState=COMPLETED ExitCode=0:0"),
            JobState::Completed
        );
        let JobState::Failed(why) =
            parse_state("JobId=7 JobState=NODE_FAIL Reason=NodeDown ExitCode=0:0")
        else {
            panic!("a node failure is a job failure");
        };
        assert!(why.contains("NODE_FAIL") && why.contains("NodeDown") && why.contains('7'));
        assert_eq!(parse_state(""), JobState::Gone);
    }

    #[test]
    fn a_silent_controller_is_told_from_a_refusal() {
        assert!(unanswered(
            "sbatch --parsable --wrap=true: sbatch: error: Batch job submission failed: \
             Unable to contact slurm controller (connect failure)"
        ));
        assert!(!unanswered(
            "sbatch --parsable --wrap=true: sbatch: error: Batch job submission failed: \
             Invalid generic resource (gres) specification"
        ));
    }

    #[test]
    fn devices_come_from_the_gres_indices() {
        let text = "JobId=1\n     Nodes=vm CPU_IDs=0 Mem=0 GRES=gpu:2(IDX:1-2)\n";
        assert_eq!(gres_indices(text), [1, 2]);
        assert_eq!(parse_indices("0,2-3"), [0, 2, 3]);
        assert_eq!(gres_indices("JobId=1 JOB_GRES=gpu:1"), Vec::<u32>::new());
    }
}
