//! Host topology: NUMA nodes, CPUs, memory, accelerators and binding candidates.

pub mod cli;
