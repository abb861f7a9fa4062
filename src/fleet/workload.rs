//! The load a plan must carry, and each replica's share of it.

use crate::probe::{DatasetSpec, LoadSpec, WorkloadSpec};

/// Measured requests of a replica's run when the space's probe sets no count.
const DEFAULT_REQUESTS: u32 = 200;

/// The load the whole deployment must carry; a load balancer spreads it evenly over the
/// replicas.
#[derive(Clone, Debug, PartialEq)]
pub enum TargetLoad {
    /// The space's own probe load: a closed loop's clients, an open loop's or a staged load's
    /// rates, or a trace, whose arrivals each replica receives at 1/replicas of the speed.
    Probe,
    /// Requests per second arriving as a Poisson process.
    Rate(f64),
    /// Clients each sending its next request when the last one ends.
    Concurrency(u32),
}

/// The workload one of `replicas` servers receives when the deployment carries `load`, the
/// requests shaped as `base` (the space's probe) says. A closed loop's clients are split
/// rounding up (a replica gets at least one); its measured requests are at least twice its
/// clients, so the run is past its first wave.
pub fn replica_workload(base: &WorkloadSpec, load: &TargetLoad, replicas: u32) -> WorkloadSpec {
    let share = f64::from(replicas.max(1));
    let requests = match &base.load {
        LoadSpec::Closed { requests, .. } | LoadSpec::Open { requests, .. } => *requests,
        _ => None,
    }
    .unwrap_or(DEFAULT_REQUESTS);
    let closed = |clients: u32| {
        let concurrency = clients.div_ceil(replicas.max(1)).max(1);
        LoadSpec::Closed {
            concurrency,
            requests: Some(requests.max(2 * concurrency)),
            duration: None,
        }
    };
    let mut w = base.clone();
    w.load = match (load, &base.load) {
        (TargetLoad::Concurrency(c), _) => closed(*c),
        (TargetLoad::Rate(rate), _) => LoadSpec::Open {
            rate: rate / share,
            burstiness: 1.0,
            max_concurrency: None,
            requests: Some(requests),
            duration: None,
        },
        (TargetLoad::Probe, LoadSpec::Closed { concurrency, .. }) => closed(*concurrency),
        (TargetLoad::Probe, other) => {
            let mut split = other.clone();
            match &mut split {
                LoadSpec::Open { rate, .. } => *rate /= share,
                LoadSpec::Stages { stages, .. } => {
                    for stage in stages {
                        stage.rate /= share;
                    }
                }
                LoadSpec::Trace { .. } | LoadSpec::Closed { .. } => {}
            }
            split
        }
    };
    if let DatasetSpec::Trace { speed, .. } = &mut w.dataset {
        *speed /= share;
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_replica_gets_its_share_of_the_load() {
        let base = WorkloadSpec::closed_random(1024, 128, 8, 100);
        let w = replica_workload(&base, &TargetLoad::Concurrency(100), 8);
        assert_eq!(
            w.load,
            LoadSpec::Closed {
                concurrency: 13,
                requests: Some(100),
                duration: None
            }
        );
        let w = replica_workload(&base, &TargetLoad::Concurrency(256), 2);
        assert!(matches!(
            w.load,
            LoadSpec::Closed {
                concurrency: 128,
                requests: Some(256),
                ..
            }
        ));
        let w = replica_workload(&base, &TargetLoad::Rate(12.0), 4);
        assert!(matches!(w.load, LoadSpec::Open { rate, .. } if (rate - 3.0).abs() < 1e-9));
        // The probe's own closed loop of 8 clients, over 3 replicas.
        let w = replica_workload(&base, &TargetLoad::Probe, 3);
        assert!(matches!(w.load, LoadSpec::Closed { concurrency: 3, .. }));
    }
}
