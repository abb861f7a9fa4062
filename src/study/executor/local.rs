//! The local executor: trials on this host's slots, each with its own accelerators, ports and
//! NUMA binding.

use super::TrialExecutor;
use crate::exec::DevicePool;
use crate::record::{Params, TrialId};
use crate::study::trial::{Assignment, TrialRun, TrialRunner};

/// Runs trials here, up to `slots` at once.
pub(crate) struct LocalExecutor<'a> {
    runner: TrialRunner<'a>,
    slots: u32,
    pool: DevicePool,
}

impl<'a> LocalExecutor<'a> {
    /// `slots` trials at once (at least one) sharing the accelerators of `pool`.
    pub fn new(runner: TrialRunner<'a>, slots: u32, pool: DevicePool) -> LocalExecutor<'a> {
        LocalExecutor {
            runner,
            slots: slots.max(1),
            pool,
        }
    }
}

impl TrialExecutor for LocalExecutor<'_> {
    fn slots(&self) -> u32 {
        self.slots
    }

    fn device_pool(&self) -> DevicePool {
        self.pool.clone()
    }

    fn run(
        &self,
        id: TrialId,
        params: Params,
        assignment: &Assignment,
    ) -> anyhow::Result<TrialRun> {
        self.runner.run(id, params, assignment)
    }
}
