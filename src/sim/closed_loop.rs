//! A closed loop in its steady state: `clients` clients, each sending a request of `isl` input
//! and `osl` output tokens as soon as its previous one ends, as a benchmark client's
//! `max_concurrency` keeps them. Over a long run such clients fall out of phase (their requests
//! are admitted in different steps, and nothing brings them back together), so the loop is
//! simulated with the clients' first requests spread over one request's duration, and that
//! first round is not measured.

use super::config::{Deployment, SimFailure};
use super::eval::{eval, eval_staggered};
use crate::probe::WorkloadSpec;
use crate::record::{Latency, MetricMap, Params};

/// One closed-loop operating point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClosedLoop {
    /// Input tokens of every request.
    pub isl: u32,
    /// Output tokens of every request (the end of sequence is ignored).
    pub osl: u32,
    /// Concurrent clients.
    pub clients: u32,
}

/// Measured requests each client sends.
const ROUNDS: u32 = 4;

/// The probe's metrics of `point` served by `deployment` with `params` (engine knobs, e.g.
/// `max_num_seqs`, `quantization`), over the loop's steady state; deterministic by `seed`.
/// Errors as [`eval`]: the failure the engine would have had at start.
pub fn eval_closed_loop(
    deployment: &Deployment,
    params: &Params,
    point: ClosedLoop,
    seed: u64,
) -> Result<MetricMap, SimFailure> {
    let ClosedLoop { isl, osl, clients } = point;
    if clients == 0 || osl == 0 {
        return Err(SimFailure::invalid(
            "a closed loop needs at least one client and one output token",
        ));
    }
    // One round with every client in step gives the length of a request at this load.
    let pilot = WorkloadSpec::closed_random(isl, osl, clients, clients);
    let request_s = eval(deployment, params, &pilot, seed)?
        .get(&Latency::E2el.key("mean"))
        .copied()
        .unwrap_or(0.0)
        * 1e-3;
    let mut workload = WorkloadSpec::closed_random(isl, osl, clients, clients * ROUNDS);
    workload.warmup = Some(clients);
    eval_staggered(deployment, params, &workload, seed, request_s).map(|e| e.metrics)
}
