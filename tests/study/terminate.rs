//! SIGTERM (what `kill`, systemd and a closing terminal send) stops the tuner as Ctrl-C does:
//! the server of the trial in flight is torn down, the tuner exits with a status, and a resume
//! finishes the study.

use crate::kit::e2e_sim_common;

use e2e_sim_common::{
    finish, kill_if_running, processes_under, space_with_port, spawn_tune, tune,
    wait_no_processes_under, wait_while_running, STUDY,
};
use std::os::unix::process::ExitStatusExt as _;

#[test]
fn sigterm_tears_down_the_server_in_flight_and_the_study_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let space = space_with_port(tmp.path(), 18690);
    let study = tmp.path().join(STUDY);
    let mut child = spawn_tune(&space, tmp.path(), &["--trials", "4"], 0);
    let serving = wait_while_running(&mut child, || !processes_under(tmp.path()).is_empty());
    assert!(serving, "the tuner ended before it started a server");
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = child.wait().unwrap();
    let left = wait_no_processes_under(tmp.path(), 5.0);
    kill_if_running(&mut child);
    assert_eq!(
        status.signal(),
        None,
        "the tuner died of SIGTERM instead of stopping"
    );
    assert_eq!(
        left,
        Vec::<i32>::new(),
        "servers left running after SIGTERM"
    );
    finish(tune(&space, tmp.path(), &["--trials", "4", "--resume"]));
    assert!(study.join("best.json").is_file());
}
