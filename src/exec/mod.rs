//! Executors' shared parts: the accelerators each trial in flight gets, so several trials run
//! at once on one host without sharing a device.

pub mod devices;

pub use devices::{DevicePool, PoolDevice};
