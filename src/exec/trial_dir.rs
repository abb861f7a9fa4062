//! A trial's folder, `<study>/trial-<n>`, and the files a trial keeps there, named in one
//! place: the server's log, the launch and the probe's report as written, the in-flight
//! marker, and what a Slurm job leaves (its record here, its output in `<study>/slurm/`).

use anyhow::Context as _;
use std::path::{Path, PathBuf};

/// The server's log in a trial's folder (and in `infertune launch`'s working folder).
pub const SERVER_LOG: &str = "server.log";

/// The marker of a trial in flight, in its folder.
pub(crate) const PENDING_FILE: &str = "pending.json";

/// The folder of one trial of a study.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrialDir {
    study: PathBuf,
    number: u32,
}

impl TrialDir {
    /// The folder of trial `number` in the study folder `study`.
    pub fn of(study: &Path, number: u32) -> TrialDir {
        TrialDir {
            study: study.to_path_buf(),
            number,
        }
    }

    /// The same folder with an absolute path, so that files an engine is told of stay valid
    /// whatever its working folder.
    pub fn absolute(&self) -> anyhow::Result<TrialDir> {
        Ok(TrialDir {
            study: std::path::absolute(&self.study)?,
            number: self.number,
        })
    }

    /// The folder's path.
    pub fn path(&self) -> PathBuf {
        self.study.join(format!("trial-{}", self.number))
    }

    /// Remove what an earlier run left in the folder and create it empty.
    pub fn create_fresh(&self) -> anyhow::Result<()> {
        let path = self.path();
        if path.exists() {
            std::fs::remove_dir_all(&path)
                .with_context(|| format!("cannot clear {}", path.display()))?;
        }
        std::fs::create_dir_all(&path).with_context(|| format!("cannot create {}", path.display()))
    }

    /// The server's log.
    pub fn server_log(&self) -> PathBuf {
        self.path().join(SERVER_LOG)
    }

    /// The log of start `attempt` that found its port taken, kept aside.
    pub fn port_busy_log(&self, attempt: u32) -> PathBuf {
        self.path().join(format!("server.port-busy-{attempt}.log"))
    }

    /// The launch as built, secrets masked.
    pub fn launch_json(&self) -> PathBuf {
        self.path().join("launch.json")
    }

    /// The probe's report.
    pub fn probe_json(&self) -> PathBuf {
        self.path().join("probe.json")
    }

    /// The marker of the trial while it is in flight.
    pub fn pending(&self) -> PathBuf {
        self.path().join(PENDING_FILE)
    }

    /// The record the trial's Slurm job wrote.
    pub fn job_record(&self) -> PathBuf {
        self.path().join("record.json")
    }

    /// The folder of the study's Slurm job outputs.
    pub fn job_outputs(&self) -> PathBuf {
        self.study.join("slurm")
    }

    /// The output of the trial's Slurm job of `attempt` (from 1).
    pub fn job_output(&self, attempt: u32) -> PathBuf {
        self.job_outputs()
            .join(format!("trial-{}-{attempt}.out", self.number))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_of_a_trial_lies_in_its_folder_but_the_job_output() {
        let trial = TrialDir::of(Path::new("results/s"), 3);
        assert_eq!(trial.path(), Path::new("results/s/trial-3"));
        for file in [
            trial.server_log(),
            trial.port_busy_log(1),
            trial.launch_json(),
            trial.probe_json(),
            trial.pending(),
            trial.job_record(),
        ] {
            assert_eq!(file.parent(), Some(trial.path().as_path()), "{file:?}");
        }
        assert_eq!(
            trial.job_output(2),
            Path::new("results/s/slurm/trial-3-2.out")
        );
    }
}
