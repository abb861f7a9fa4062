//! The executor layer: where and how a trial runs. A [`TrialExecutor`] runs one trial of a
//! resolved config to its record: the [`LocalExecutor`] on this host's slots (devices, ports,
//! NUMA binding), the [`SlurmExecutor`] as a Slurm job that runs the same trial on a node, the
//! [`FakeExecutor`] from a landscape in virtual time (tests, the search benchmark). The
//! trial's body (launch, probe under watch, judge, teardown) lives here; the study above only
//! plans and dispatches.

mod backends;
mod build;
pub mod devices;
mod executor;
mod fake;
pub(crate) mod interrupt;
mod local;
mod objective;
pub(crate) mod pending;
mod prober;
mod slots;
pub mod slurm;
mod trial_dir;

pub use backends::{Backends, Silent, TrialObserver};
pub use build::build;
pub use devices::{DevicePool, PoolDevice};
pub use executor::{Assignment, TrialExecutor, TrialRun};
pub use fake::{FakeExecutor, Landscape};
pub use interrupt::StopFlag;
pub use local::{free_port, not_run, EarlyStops, LocalExecutor};
pub use objective::objective;
pub(crate) use prober::HttpProber;
pub use prober::Prober;
pub(crate) use slots::{Finished, Slots};
pub use slurm::{run_in_job, SlurmExecutor};
pub use trial_dir::{TrialDir, SERVER_LOG};

/// What a trial launches, as the study's exports rebuild it for the winner.
pub use crate::launch::LaunchSpec;
