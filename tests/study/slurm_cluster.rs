//! Studies through a real Slurm cluster (`scripts/provision-slurm.sh start`, its `SLURM_CONF`
//! exported): each trial is a job whose server sees only the pretend GPU Slurm gave it, the
//! journal carries the job ids, nothing stays queued or running after the study, Ctrl-C cancels
//! the jobs in flight, and a tuner killed mid-study resumes without losing or repeating a trial
//! and leaves no job behind.
//! They need a cluster, so they are ignored in the fast tier; scripts/test.sh starts one and
//! runs them (see `kit::provisioned`).

use crate::kit::{e2e_sim_common, provisioned};

use crate::kit::study_fakes::search_configs;
use e2e_sim_common::{
    kill_if_running, records, records_so_far, spawn_tune, tune, wait_no_processes_under,
    wait_while_running, FIXTURE, STUDY,
};
use infertune::record::TrialRecord;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// True when a cluster is configured (`SLURM_CONF` set); see `kit::provisioned`.
pub(super) fn cluster() -> bool {
    let conf = std::env::var_os("SLURM_CONF").ok_or("SLURM_CONF is unset".to_string());
    provisioned::or_skip(
        conf,
        "INFERTUNE_REQUIRE_SLURM",
        "run scripts/provision-slurm.sh start and export what it prints",
    )
    .is_some()
}

/// The e2e fixture on ports from `port`, each trial a Slurm job holding one pretend GPU.
pub(super) fn space(dir: &Path, port: u16) -> PathBuf {
    let text = std::fs::read_to_string(FIXTURE)
        .unwrap()
        .replace("port: 18300", &format!("port: {port}"));
    let text = format!("{text}\nexecutor:\n  kind: slurm\n  gres: \"gpu:1\"\n  max_jobs: 3\n");
    let path = dir.join("slurm.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Jobs of the study in `study` still known to `squeue`.
pub(super) fn jobs_left(study: &Path) -> Vec<String> {
    let out = std::process::Command::new("squeue")
        .args(["-h", "-n", &format!("infertune-{STUDY}"), "-o", "%i|%k"])
        .output()
        .expect("squeue runs");
    let comment = std::path::absolute(study).unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.ends_with(&format!("|{}", comment.display())))
        .map(String::from)
        .collect()
}

/// Every launched trial ran as a job and its server saw only the GPU the job held; trials
/// that ran at once held different GPUs.
fn assert_jobs_saw_their_own_devices(study: &Path, all: &[TrialRecord]) {
    let launched: Vec<&TrialRecord> = all.iter().filter(|r| r.ready_s.is_some()).collect();
    assert!(!launched.is_empty(), "{all:#?}");
    let jobs: BTreeSet<u64> = launched
        .iter()
        .map(|r| r.job_id.expect("a job id"))
        .collect();
    assert_eq!(jobs.len(), launched.len(), "two trials share a job id");
    for r in &launched {
        assert_eq!(r.devices.len(), 1, "trial {}: {:?}", r.id.number, r.devices);
        let log = std::fs::read_to_string(study.join(format!("trial-{}/server.log", r.id.number)))
            .unwrap();
        let echo: serde_json::Value = serde_json::from_str(
            log.lines()
                .find_map(|l| l.split_once("INFO: slot: ").map(|(_, j)| j))
                .expect("the server logs its slot"),
        )
        .unwrap();
        assert_eq!(
            echo["visible_devices"]["CUDA_VISIBLE_DEVICES"],
            r.devices[0].to_string(),
            "trial {}",
            r.id.number
        );
    }
    for (i, a) in launched.iter().enumerate() {
        for b in &launched[i + 1..] {
            let at_once = a.started_unix < b.started_unix + b.wall_s
                && b.started_unix < a.started_unix + a.wall_s;
            assert!(
                !at_once || a.devices != b.devices,
                "trials {} and {} ran at once on {:?}",
                a.id.number,
                b.id.number,
                a.devices
            );
        }
    }
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh, which starts one"]
fn a_slurm_study_runs_each_trial_as_a_job_on_its_own_gpu_and_leaves_nothing() {
    if !cluster() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let space = space(tmp.path(), 18720);
    let out = tune(&space, tmp.path(), &["--trials", "7"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let study = tmp.path().join(STUDY);
    let all = records(&study);
    assert_eq!(search_configs(&all).len(), 7);
    assert_jobs_saw_their_own_devices(&study, &all);
    let numbers: BTreeSet<u32> = all.iter().map(|r| r.id.number).collect();
    assert_eq!(numbers.len(), all.len());
    let best: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(study.join("best.json")).unwrap()).unwrap();
    let winner = best["trial"].as_u64().unwrap() as u32;
    assert!(all.iter().any(|r| r.id.number == winner && r.is_feasible()));
    let script = std::fs::read_to_string(study.join("best.sh")).unwrap();
    assert!(script.contains(&format!("(trial {winner})")), "{script}");
    assert_eq!(jobs_left(&study), Vec::<String>::new());
    assert_eq!(wait_no_processes_under(tmp.path(), 5.0), Vec::<i32>::new());
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh, which starts one"]
fn an_interrupted_or_killed_slurm_study_resumes_without_losing_a_trial_or_leaving_a_job() {
    if !cluster() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let space = space(tmp.path(), 18760);
    let study = tmp.path().join(STUDY);
    let args = ["--trials", "8"];
    let mut kept: Vec<TrialRecord> = Vec::new();
    let mut caught = 0;
    // Ctrl-C once (it cancels the jobs in flight), then kill -9 twice (the jobs stay).
    for (attempt, wait_s) in [3.0, 3.0, 4.0].into_iter().enumerate() {
        let mut child = spawn_tune(&space, tmp.path(), &args, attempt);
        std::thread::sleep(Duration::from_secs_f64(wait_s));
        // Stop it while a job is in flight, however fast or slow this machine is.
        wait_while_running(&mut child, || !jobs_left(&study).is_empty());
        if attempt == 0 {
            let pid = nix::unistd::Pid::from_raw(child.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
            assert!(
                child.wait().unwrap().code().is_some(),
                "the tuner exits on Ctrl-C"
            );
            assert_eq!(jobs_left(&study), Vec::<String>::new(), "Ctrl-C left jobs");
            assert_eq!(wait_no_processes_under(tmp.path(), 10.0), Vec::<i32>::new());
            continue;
        }
        kill_if_running(&mut child);
        caught += jobs_left(&study).len();
        let now = records_so_far(&study);
        assert!(now.len() >= kept.len() && now[..kept.len()] == kept[..]);
        kept = now;
    }
    assert!(
        caught > 0,
        "no kill left a job running; the resume's cancel went untested"
    );
    let out = tune(&space, tmp.path(), &[&args[..], &["--resume"]].concat())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let done = records(&study);
    assert_eq!(done[..kept.len()], kept[..], "a completed trial changed");
    assert_eq!(search_configs(&done).len(), 8, "{done:#?}");
    let numbers: BTreeSet<u32> = done.iter().map(|r| r.id.number).collect();
    assert_eq!(numbers.len(), done.len(), "a trial number repeats");
    assert_eq!(jobs_left(&study), Vec::<String>::new());
    assert_eq!(wait_no_processes_under(tmp.path(), 10.0), Vec::<i32>::new());
}

#[test]
#[ignore = "needs a Slurm cluster: run scripts/test.sh, which starts one"]
fn a_study_waits_for_a_cancelled_leftover_job_to_end_before_its_first_trial() {
    if !cluster() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let space = space(tmp.path(), 18800);
    let study = std::path::absolute(tmp.path().join(STUDY)).unwrap();
    // A job of this study left by a killed tuner, which takes seconds to stop when cancelled
    // (as `infertune trial run` does while it stops its server and writes its logs).
    let ended = tmp.path().join("leftover-ended");
    let script = tmp.path().join("leftover.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/bash\ntrap 'sleep 3; date +%s.%N > {}; exit 0' TERM\n\
             while true; do sleep 0.2; done\n",
            ended.display()
        ),
    )
    .unwrap();
    let submitted = std::process::Command::new("sbatch")
        .arg("--parsable")
        .arg(format!("--job-name=infertune-{STUDY}"))
        .arg(format!("--comment={}", study.display()))
        .arg(format!(
            "--output={}",
            tmp.path().join("leftover.out").display()
        ))
        .arg(&script)
        .output()
        .unwrap();
    assert!(submitted.status.success(), "{submitted:?}");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !tmp.path().join("leftover.out").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the leftover never ran"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_millis(500));
    let out = tune(&space, tmp.path(), &["--trials", "2"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("cancelled Slurm job"), "{stderr}");
    let ended: f64 = std::fs::read_to_string(&ended)
        .expect("the leftover ended on its own cancel")
        .trim()
        .parse()
        .unwrap();
    let submitted: Vec<f64> = records(&study)
        .iter()
        .filter_map(|r| Some(r.started_unix - r.metrics.get("job_start_s")?))
        .collect();
    assert!(!submitted.is_empty(), "no trial ran as a job");
    let first_submitted = submitted.into_iter().fold(f64::INFINITY, f64::min);
    assert!(
        first_submitted > ended,
        "a trial was submitted at {first_submitted}, before the cancelled leftover ended at {ended}"
    );
    assert_eq!(jobs_left(&study), Vec::<String>::new());
}
