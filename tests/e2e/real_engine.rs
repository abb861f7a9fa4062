//! What the end-to-end tests on real engines share: reading a provisioning script's
//! environment, running `infertune tune` on a shipped space with some sections replaced, and
//! checking that nothing the study started outlives it.

use infertune::record::{Outcome, TrialRecord};
use infertune::study::journal;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The variables named in `keys` after sourcing `scripts` (repository paths) in order, or why
/// they could not be read.
pub fn sourced_env(scripts: &[&str], keys: &[&str]) -> Result<Vec<(String, String)>, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sources: Vec<String> = (1..=scripts.len()).map(|i| format!(". \"${i}\"")).collect();
    let out = Command::new("bash")
        .args(["-c", &format!("{} && env", sources.join(" && ")), "bash"])
        .args(scripts.iter().map(|s| root.join(s)))
        .output()
        .map_err(|e| format!("cannot run bash to read {scripts:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "sourcing {scripts:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let env: Vec<(String, String)> = text
        .lines()
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| keys.contains(k))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    if let Some(missing) = keys.iter().find(|k| !env.iter().any(|(e, _)| e == *k)) {
        return Err(format!("{scripts:?} do not set {missing}"));
    }
    Ok(env)
}

/// The path `key` names in `env` (read by [`sourced_env`], which checked it is there).
pub fn env_path(env: &[(String, String)], key: &str) -> PathBuf {
    env.iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| PathBuf::from(v))
        .unwrap_or_else(|| panic!("{key} was not read"))
}

/// `Err` naming the first of `paths` that does not exist.
pub fn all_exist(what: &str, paths: &[PathBuf]) -> Result<(), String> {
    match paths.iter().find(|p| !p.exists()) {
        Some(missing) => Err(format!(
            "{what} is not provisioned ({} is missing)",
            missing.display()
        )),
        None => Ok(()),
    }
}

/// A finished `infertune tune` run.
pub struct TuneRun {
    /// The study's folder under the results.
    pub study: PathBuf,
    /// How long the command ran.
    pub wall: Duration,
}

impl TuneRun {
    /// The study's records, printed, checked to be the four trials the end-to-end tests plan.
    pub fn four_records(&self) -> [TrialRecord; 4] {
        let records = journal::read_records(&self.study).unwrap();
        print_trials(&records);
        records
            .try_into()
            .unwrap_or_else(|records: Vec<TrialRecord>| panic!("not four records: {records:#?}"))
    }
}

/// The text of the shipped space `name` (under search-spaces/).
pub fn shipped_space(name: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(root.join("search-spaces").join(name)).unwrap()
}

/// Runs `infertune tune` (study `e2e`, no pruning) on the space `text`, written in `dir`, and
/// checks it finished (0: a winner, 1: no config met the SLO).
pub fn tune(dir: &Path, text: &str, env: &[(String, String)], timeout: Duration) -> TuneRun {
    let space = dir.join("e2e-space.yaml");
    std::fs::write(&space, text).unwrap();
    let results = dir.join("results");
    let started = Instant::now();
    let output = assert_cmd::Command::cargo_bin("infertune")
        .unwrap()
        .arg("tune")
        .arg("--space")
        .arg(&space)
        .arg("--results")
        .arg(&results)
        .args(["--study", "e2e", "--no-prune"])
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .timeout(timeout)
        .output()
        .unwrap();
    let wall = started.elapsed();
    let log = format!(
        "exit: {:?}\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    eprintln!("tune took {:.1} s\n{log}", wall.as_secs_f64());
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "tune must finish (0: a winner, 1: no config met the SLO)\n{log}"
    );
    TuneRun {
        study: results.join("e2e"),
        wall,
    }
}

/// `yaml` with the named top-level sections replaced by the given texts (appended at the end).
pub fn replace_sections(yaml: &str, sections: &[(&str, &str)]) -> String {
    let mut out = String::new();
    let mut skipping = false;
    for line in yaml.lines() {
        if !line.is_empty() && !line.starts_with([' ', '#']) {
            skipping = sections
                .iter()
                .any(|(name, _)| line.starts_with(&format!("{name}:")));
        }
        if !skipping {
            out.push_str(line);
            out.push('\n');
        }
    }
    sections.iter().for_each(|(_, text)| out.push_str(text));
    out
}

/// Checks that no process the study started is left (trials run in their own folders under
/// `dir`) and that the ports of `trials` are free again.
pub fn assert_nothing_left(dir: &Path, study: &Path, trials: &[u32]) {
    let left = processes_with_cwd_under(dir);
    assert!(
        left.is_empty(),
        "server processes outlived the study: {left:#?}"
    );
    for number in trials {
        let port = launch_port(&study.join(format!("trial-{number}/launch.json")));
        assert!(
            std::net::TcpListener::bind(("127.0.0.1", port)).is_ok(),
            "port {port} of trial {number} is still taken"
        );
    }
}

/// Every process whose working directory lies under `dir`, as `pid: command line`.
fn processes_with_cwd_under(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter(|e| std::fs::read_link(e.path().join("cwd")).is_ok_and(|cwd| cwd.starts_with(dir)))
        .map(|e| {
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            format!("{}: {cmdline}", e.file_name().to_string_lossy())
        })
        .collect()
}

fn launch_port(launch_json: &Path) -> u16 {
    let text = std::fs::read_to_string(launch_json).unwrap();
    let spec: serde_json::Value = serde_json::from_str(&text).unwrap();
    spec["port"]
        .as_u64()
        .and_then(|p| u16::try_from(p).ok())
        .unwrap()
}

/// A trial that started and was probed to the end, every request producing `output_len`
/// tokens (ignore_eos), whose probe counted exactly the tokens the engine's own output-token
/// counter says it generated over the probe (warm-up included).
pub fn assert_served(record: &TrialRecord, study: &Path, output_len: f64) {
    let n = record.number;
    assert!(
        matches!(record.outcome, Outcome::Feasible | Outcome::Infeasible),
        "trial {n} must be served and probed: {:?}",
        record.outcome
    );
    assert!(record.ready_s.is_some(), "trial {n} has no readiness time");
    let metric = |name: &str| {
        *record
            .metrics
            .get(name)
            .unwrap_or_else(|| panic!("trial {n} has no `{name}`: {:?}", record.metrics))
    };
    assert_eq!(metric("failed"), 0.0, "trial {n}");
    let completed = metric("completed");
    assert!(completed >= 8.0, "trial {n} completed {completed} requests");
    assert!(metric("duration_s") >= 5.0, "trial {n} ran under 5 s");
    let measured = metric("total_output_tokens");
    assert_eq!(measured, completed * output_len, "trial {n}: ignore_eos");
    let probed = measured + metric("warmup_output_tokens");
    assert_eq!(
        metric("server_output_tokens"),
        probed,
        "trial {n}: the engine's output-token counter rose by a different count than the probe's"
    );
    assert!(study.join(format!("trial-{n}/probe.json")).exists());
}

/// Prints each trial's outcome, readiness time and wall time.
pub fn print_trials(records: &[TrialRecord]) {
    for r in records {
        eprintln!(
            "trial {}: {:?}, ready after {:?} s, {:.1} s in all",
            r.number, r.outcome, r.ready_s, r.wall_s
        );
    }
}
