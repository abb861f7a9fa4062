//! Trials as Slurm jobs: the `sbatch`/`scontrol`/`scancel`/`squeue` wrappers ([`jobs`]) and
//! the executor that submits one job per trial and journals what the job recorded.

mod executor;
pub mod jobs;

pub use executor::{run_in_job, Jobs, SlurmExecutor};
