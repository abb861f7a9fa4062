//! Everything a run would refuse before sending its first request, checked up front: the
//! load's numbers, durations, and the dataset (its files read, its lengths), so a space can be
//! refused when it is loaded instead of failing every trial.

use super::dataset;
use super::workload::WorkloadSpec;
use crate::util::{MAX_DURATION, MAX_DURATION_DAYS};
use anyhow::{bail, Result};

/// Checks `workload` the way a run would; the error says which value is wrong.
pub fn check(workload: &WorkloadSpec) -> Result<()> {
    super::plan::Plan::new(workload)?;
    let durations = [
        ("timeout", Some(workload.timeout)),
        ("stall_timeout", workload.stall_timeout),
        ("load.duration", workload.load.limits().1),
    ];
    for (name, value) in durations {
        if value.is_some_and(|d| d > MAX_DURATION) {
            bail!("{name} is longer than {MAX_DURATION_DAYS} days; write a shorter duration");
        }
    }
    dataset::plan(workload, 1)?;
    Ok(())
}
