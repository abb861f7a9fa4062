//! Integration tests of `exec`, a trial's body: a server whose port is taken at start, a server
//! that dies during its probe; and the fake executor behind the dispatch loop. One module per
//! concern, in one binary (one link). The Slurm executor's tests run a whole study through a
//! cluster, so they stay with `study`'s.

#[path = "../kit/mod.rs"]
mod kit;

mod fake;
mod port_busy;
mod server_death;
