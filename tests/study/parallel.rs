//! Trials in flight at once on the simulator (the real binary, real `sim serve` processes):
//! each server sees only its own pretend devices and port, no two trials in flight share
//! either, re-validation repeats run on another slot than their original, the views agree, and
//! a tuner interrupted or killed mid-study resumes without losing or repeating a trial.

use crate::kit::e2e_sim_common;

use crate::kit::study_fakes::search_configs;
use e2e_sim_common::{
    kill_if_running, records, records_so_far, spawn_tune, tune, wait_no_processes_under,
    wait_while_running, FIXTURE, STUDY,
};
use infertune::record::TrialRecord;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The e2e fixture on ports from `port`, with four pretend devices, two per trial.
fn space(dir: &Path, port: u16) -> PathBuf {
    let text = std::fs::read_to_string(FIXTURE).unwrap();
    let text = text
        .replace("port: 18300", &format!("port: {port}"))
        .replace(
            "  stop_grace: 2s\n",
            "  stop_grace: 2s\n  devices: [0, 1, 2, 3]\n  devices_per_trial: 2\n",
        );
    assert!(text.contains("devices_per_trial"), "the fixture changed");
    let path = dir.join("parallel.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

/// What a trial's server said it was given (the simulator logs it at start).
fn echoed_slot(study: &Path, number: u32) -> serde_json::Value {
    let log = std::fs::read_to_string(study.join(format!("trial-{number}/server.log"))).unwrap();
    let line = log
        .lines()
        .find_map(|l| {
            l.split_once("INFO: slot: ")
                .map(|(_, json)| json.to_string())
        })
        .unwrap_or_else(|| panic!("trial {number} logged no slot:\n{log}"));
    serde_json::from_str(&line).unwrap()
}

fn overlaps(a: &TrialRecord, b: &TrialRecord) -> bool {
    a.started_unix < b.started_unix + b.wall_s && b.started_unix < a.started_unix + a.wall_s
}

#[test]
fn trials_in_flight_each_see_only_their_own_devices_and_port() {
    let tmp = tempfile::tempdir().unwrap();
    let space = space(tmp.path(), 18620);
    let out = tune(&space, tmp.path(), &["--parallel", "2", "--trials", "8"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let study = tmp.path().join(STUDY);
    let all = records(&study);
    let launched: Vec<&TrialRecord> = all.iter().filter(|r| r.ready_s.is_some()).collect();
    assert!(launched.len() >= 6, "{all:#?}");
    let mut ports = Vec::new();
    for r in &launched {
        assert_eq!(r.devices.len(), 2, "trial {}: {:?}", r.id.number, r.devices);
        assert!(r.devices.iter().all(|d| *d < 4), "{:?}", r.devices);
        let echo = echoed_slot(&study, r.id.number);
        let seen: Vec<String> = r.devices.iter().map(u32::to_string).collect();
        assert_eq!(
            echo["visible_devices"],
            serde_json::json!({"CUDA_VISIBLE_DEVICES": seen.join(",")}),
            "trial {}",
            r.id.number
        );
        ports.push((r.id.number, echo["port"].as_u64().unwrap()));
    }
    let port_of = |n: u32| ports.iter().find(|(m, _)| *m == n).unwrap().1;
    let mut overlapping = 0;
    for (i, a) in launched.iter().enumerate() {
        for b in &launched[i + 1..] {
            if overlaps(a, b) {
                overlapping += 1;
                assert!(
                    a.devices.iter().all(|d| !b.devices.contains(d)),
                    "trials {} and {} shared a device: {:?} {:?}",
                    a.id.number,
                    b.id.number,
                    a.devices,
                    b.devices
                );
                assert_ne!(port_of(a.id.number), port_of(b.id.number));
                assert_ne!(a.slot, b.slot);
            }
        }
    }
    assert!(overlapping > 0, "no two trials ran at once");
    for repeat in all.iter().filter(|r| r.repeat_of().is_some()) {
        let original = all
            .iter()
            .find(|r| Some(r.id.number) == repeat.repeat_of())
            .unwrap();
        assert_ne!(
            repeat.slot, original.slot,
            "repeat {} ran on its original's slot",
            repeat.id.number
        );
    }
    assert_views_agree(&study, &all);
    assert_eq!(search_configs(&all).len(), 8);
    assert_eq!(wait_no_processes_under(tmp.path(), 5.0), Vec::<i32>::new());
}

/// trials.csv holds one row per record, and best.json's trial is a feasible record that
/// best.sh names.
fn assert_views_agree(study: &Path, all: &[TrialRecord]) {
    let numbers: BTreeSet<u32> = all.iter().map(|r| r.id.number).collect();
    assert_eq!(numbers.len(), all.len(), "a trial number repeats");
    let mut csv = csv::Reader::from_path(study.join("trials.csv")).unwrap();
    let column = csv.headers().unwrap().iter().position(|h| h == "number");
    let rows: BTreeSet<u32> = csv
        .records()
        .map(|r| r.unwrap()[column.unwrap()].parse().unwrap())
        .collect();
    assert_eq!(rows, numbers);
    let best: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(study.join("best.json")).unwrap()).unwrap();
    let winner = best["trial"].as_u64().unwrap() as u32;
    let record = all.iter().find(|r| r.id.number == winner).unwrap();
    assert!(record.is_feasible(), "{record:?}");
    assert_eq!(
        best["params"],
        serde_json::to_value(&record.params).unwrap()
    );
    let script = std::fs::read_to_string(study.join("best.sh")).unwrap();
    assert!(script.contains(&format!("(trial {winner})")), "{script}");
}

#[test]
fn a_parallel_study_interrupted_and_killed_resumes_without_losing_or_repeating_a_trial() {
    let tmp = tempfile::tempdir().unwrap();
    let space = space(tmp.path(), 18660);
    let study = tmp.path().join(STUDY);
    let args = ["--parallel", "2", "--trials", "10"];
    let mut kept: Vec<TrialRecord> = Vec::new();
    let mut caught_in_flight = 0;
    // Ctrl-C once, then kill -9 at later and later moments.
    for (attempt, wait_s) in [4.0, 3.0, 5.0, 4.0].into_iter().enumerate() {
        let mut child = spawn_tune(&space, tmp.path(), &args, attempt);
        std::thread::sleep(Duration::from_secs_f64(wait_s));
        // Stop it while a trial is in flight, however fast or slow this machine is.
        wait_while_running(&mut child, || !in_flight(&study).is_empty());
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        if attempt == 0 {
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
            let status = child.wait().unwrap();
            assert!(status.code().is_some(), "the tuner must exit on Ctrl-C");
            assert_eq!(wait_no_processes_under(tmp.path(), 5.0), Vec::<i32>::new());
        } else {
            kill_if_running(&mut child);
        }
        caught_in_flight += in_flight(&study).len();
        let now = records_so_far(&study);
        assert!(now.len() >= kept.len() && now[..kept.len()] == kept[..]);
        kept = now;
    }
    assert!(caught_in_flight > 0, "no stop caught a trial in flight");
    let out = tune(&space, tmp.path(), &[&args[..], &["--resume"]].concat())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(wait_no_processes_under(tmp.path(), 5.0), Vec::<i32>::new());
    let done = records(&study);
    assert_eq!(done[..kept.len()], kept[..], "a completed trial changed");
    assert_views_agree(&study, &done);
    assert_eq!(search_configs(&done).len(), 10, "{done:#?}");
    assert!(in_flight(&study).is_empty(), "trials left marked in flight");
}

/// Trial folders marked in flight.
fn in_flight(study: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(study)
        .map(|entries| {
            entries
                .filter_map(|e| Some(e.ok()?.path().join("pending.json")))
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default()
}
