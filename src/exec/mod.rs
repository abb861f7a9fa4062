//! Where trials run: the accelerators each trial in flight on this host gets, and Slurm jobs.

pub mod devices;
pub mod slurm;

pub use devices::{DevicePool, PoolDevice};
