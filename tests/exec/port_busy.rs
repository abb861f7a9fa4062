//! A server that fails to start because another process holds a port it binds (XInference
//! picks its internal ports at random) is started again: the port is the machine's state at
//! that moment, not the config's fault.

use crate::kit::study_fakes::{self, options, FakeSampler, Rig};
use infertune::record::{FailureKind, Outcome, TrialRecord};

#[test]
fn a_start_that_finds_a_port_taken_is_started_again_and_its_log_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let space = study_fakes::space(7, 4);
    let mut rig = Rig::new(&space);
    // The baseline's first start, and both the first and second starts of a later trial.
    rig.launcher.port_busy_on = vec![1, 4, 5];
    let mut sampler = FakeSampler { seed: 7 };
    let dir = tmp.path().join("busy");
    let result = infertune::study::run(
        &space,
        &mut sampler,
        rig.backends(),
        &options(dir.clone(), false, false),
    )
    .unwrap();
    assert_eq!(
        rig.launcher.registry.live(),
        0,
        "a fake server was left running"
    );
    assert!(
        result.records.iter().all(|r| !matches!(
            r.outcome,
            Outcome::Failed {
                kind: FailureKind::PortBusy,
                ..
            }
        )),
        "{:#?}",
        result.records
    );
    assert!(result.records[0].ready_s.is_some(), "the baseline started");
    let launched = result.records.iter().filter(|r| !is_refused(r)).count();
    assert_eq!(rig.launcher.registry.started(), launched + 3);
    let kept = |n: u32, attempt: u32| {
        dir.join(format!("trial-{n}/server.port-busy-{attempt}.log"))
            .exists()
    };
    assert!(kept(0, 1), "the baseline's first log");
    let twice: Vec<u32> = result
        .records
        .iter()
        .map(|r| r.id.number)
        .filter(|&n| kept(n, 1) && kept(n, 2))
        .collect();
    assert_eq!(twice.len(), 1, "one trial started three times: {twice:?}");
}

fn is_refused(record: &TrialRecord) -> bool {
    matches!(record.outcome, Outcome::Rejected { .. })
}

#[test]
fn a_port_that_stays_taken_fails_the_trial_as_port_busy_after_the_retries() {
    let tmp = tempfile::tempdir().unwrap();
    let space = study_fakes::space(7, 3);
    let mut rig = Rig::new(&space);
    // The baseline starts; the next trial's every start finds the port taken.
    rig.launcher.port_busy_on = (2..=4).collect();
    let mut sampler = FakeSampler { seed: 7 };
    let result = infertune::study::run(
        &space,
        &mut sampler,
        rig.backends(),
        &options(tmp.path().join("busy"), false, false),
    )
    .unwrap();
    let one = result.records[1..]
        .iter()
        .find(|r| !is_refused(r))
        .expect("a trial after the baseline was started");
    assert!(
        matches!(&one.outcome, Outcome::Failed { kind: FailureKind::PortBusy, message } if message.contains("address already in use")),
        "{one:#?}"
    );
    assert!(
        !one.is_config_failure(),
        "samplers must not steer away from it"
    );
}
