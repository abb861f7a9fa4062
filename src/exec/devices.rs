//! The pool of accelerators trials take their devices from: contiguous runs, on one NUMA node
//! where the topology says so, never a device another trial in flight holds.

use crate::topo::Topology;

/// One accelerator of the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolDevice {
    /// Index as the vendor runtime numbers it (`CUDA_VISIBLE_DEVICES`, …).
    pub index: u32,
    /// Its local NUMA node, when known.
    pub node: Option<u32>,
}

/// Accelerators free or held by trials in flight.
#[derive(Clone, Debug)]
pub struct DevicePool {
    devices: Vec<PoolDevice>,
    busy: Vec<bool>,
}

impl DevicePool {
    /// A pool of `devices` in this order, all free.
    pub fn new(devices: Vec<PoolDevice>) -> DevicePool {
        let busy = vec![false; devices.len()];
        DevicePool { devices, busy }
    }

    /// The pool of `listed` indices (`launch.devices`), or every accelerator of `topology`
    /// when none are listed; nodes come from `topology` when it knows the device.
    pub fn of(listed: Option<&[u32]>, topology: Option<&Topology>) -> DevicePool {
        let node = |index: u32| topology.and_then(|t| t.accelerator(index)?.numa_node);
        let indices: Vec<u32> = match (listed, topology) {
            (Some(listed), _) => listed.to_vec(),
            (None, Some(t)) => t.accelerators.iter().map(|a| a.index).collect(),
            (None, None) => Vec::new(),
        };
        DevicePool::new(
            indices
                .into_iter()
                .map(|index| PoolDevice {
                    index,
                    node: node(index),
                })
                .collect(),
        )
    }

    /// Devices in the pool (free or not).
    pub fn len(&self) -> usize {
        self.devices.len()
    }

    /// True when the pool has no device: trials are not pinned.
    pub fn is_empty(&self) -> bool {
        self.devices.is_empty()
    }

    /// Take `n` free devices, contiguous in the pool's order, preferring runs on one NUMA node,
    /// then runs aligned to `n`, then runs sharing no device with `avoid`; `None` when no such
    /// run is free now.
    pub fn take(&mut self, n: usize, avoid: &[u32]) -> Option<Vec<u32>> {
        if n == 0 {
            return Some(Vec::new());
        }
        let start = (0..=self.devices.len().checked_sub(n)?)
            .filter(|&i| self.busy[i..i + n].iter().all(|b| !b))
            .min_by_key(|&i| {
                let run = &self.devices[i..i + n];
                let one_node = run.iter().all(|d| d.node == run[0].node);
                let shared = run.iter().filter(|d| avoid.contains(&d.index)).count();
                (!one_node, i % n != 0, shared, i)
            })?;
        self.busy[start..start + n].fill(true);
        Some(
            self.devices[start..start + n]
                .iter()
                .map(|d| d.index)
                .collect(),
        )
    }

    /// Return `devices` (taken earlier) to the pool.
    pub fn give_back(&mut self, devices: &[u32]) {
        for (device, busy) in self.devices.iter().zip(self.busy.iter_mut()) {
            if devices.contains(&device.index) {
                *busy = false;
            }
        }
    }

    /// The NUMA node all of `devices` sit on, when they share one the pool knows.
    pub fn node_of(&self, devices: &[u32]) -> Option<u32> {
        let mut nodes = self
            .devices
            .iter()
            .filter(|d| devices.contains(&d.index))
            .map(|d| d.node);
        let first = nodes.next()??;
        nodes.all(|n| n == Some(first)).then_some(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(nodes: &[u32]) -> DevicePool {
        DevicePool::new(
            nodes
                .iter()
                .enumerate()
                .map(|(i, n)| PoolDevice {
                    index: i as u32,
                    node: Some(*n),
                })
                .collect(),
        )
    }

    #[test]
    fn trials_never_share_a_device() {
        let mut p = pool(&[0, 0, 1, 1]);
        let a = p.take(2, &[]).unwrap();
        let b = p.take(2, &[]).unwrap();
        assert_eq!(a, [0, 1]);
        assert_eq!(b, [2, 3]);
        assert_eq!(p.take(1, &[]), None);
        p.give_back(&a);
        assert_eq!(p.take(1, &[]), Some(vec![0]));
    }

    #[test]
    fn runs_stay_on_one_node_when_they_can() {
        // Nodes 0,1,1,2: a pair on one node is only at 1..3.
        let mut p = pool(&[0, 1, 1, 2]);
        assert_eq!(p.take(2, &[]), Some(vec![1, 2]));
        assert_eq!(p.node_of(&[1, 2]), Some(1));
        assert_eq!(p.node_of(&[0, 1]), None);
    }

    #[test]
    fn avoided_devices_are_taken_last() {
        let mut p = pool(&[0, 0, 0, 0]);
        assert_eq!(p.take(1, &[0]), Some(vec![1]));
        assert_eq!(p.take(1, &[2, 3]), Some(vec![0]));
        assert_eq!(p.take(1, &[2, 3]), Some(vec![2]));
    }

    #[test]
    fn more_than_the_pool_is_never_free() {
        let mut p = pool(&[0, 0]);
        assert_eq!(p.take(3, &[]), None);
        assert_eq!(p.take(0, &[]), Some(vec![]));
    }

    #[test]
    fn listed_devices_keep_their_order() {
        let p = DevicePool::of(Some(&[4, 5, 6]), None);
        assert_eq!(p.len(), 3);
        assert_eq!(p.node_of(&[4]), None);
    }
}
