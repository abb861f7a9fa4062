//! The harness of the end-to-end tests on real engines: reading a provisioning script's
//! environment, editing a shipped space, and [`FourTrials`], the one study every engine's test
//! runs (the baseline, a config the rule pack refuses, one the engine refuses at start, and one
//! that serves) with its checks, down to nothing the study started outliving it.

use crate::kit::e2e_sim_common::processes_under;
use infertune::record::{FailureKind, Outcome, TrialRecord};
use infertune::study::journal;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The variables named in `keys` after sourcing `scripts` (repository paths) in order, or why
/// they could not be read.
fn sourced_env(scripts: &[&str], keys: &[&str]) -> Result<Vec<(String, String)>, String> {
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

/// The variables `keys` of the provisioning `scripts` (see [`sourced_env`]), once every path
/// `needs` names in them exists; else why `what` is not provisioned.
pub fn provisioned(
    what: &str,
    scripts: &[&str],
    keys: &[&str],
    needs: impl Fn(&[(String, String)]) -> Vec<PathBuf>,
) -> Result<Vec<(String, String)>, String> {
    let env = sourced_env(scripts, keys)?;
    match needs(&env).iter().find(|p| !p.exists()) {
        Some(missing) => Err(format!(
            "{what} is not provisioned ({} is missing)",
            missing.display()
        )),
        None => Ok(env),
    }
}

/// What one engine's four-trial study must show: the queued configs of its space's `search`
/// are, after the baseline, one the rule pack refuses, one the engine refuses at start, and
/// one that serves.
pub struct FourTrials<'a> {
    /// The rule that refuses trial 1.
    pub rule: &'a str,
    /// How the rule's message starts.
    pub rule_message: &'a str,
    /// The engine's own message refusing trial 2, as classified.
    pub refusal: &'a str,
    /// Text the log of trial 3 (the config that serves) must hold: the engine applied it.
    pub served_log: &'a [&'a str],
    /// Output tokens per request of the space's probe (`output_len`, with ignore_eos).
    pub output_len: f64,
}

/// A four-trial study that passed [`FourTrials::run`]'s checks.
pub struct Finished {
    /// The study's folder (removed when this is dropped).
    pub study: PathBuf,
    /// Its records, in trial order.
    pub records: [TrialRecord; 4],
    _dir: tempfile::TempDir,
}

impl FourTrials<'_> {
    /// Runs `infertune tune` on the space `text` with `env`, within `timeout`, and checks the
    /// four trials and that nothing the study started outlives it.
    pub fn run(&self, text: &str, env: &[(String, String)], timeout: Duration) -> Finished {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let study = tune(&root, text, env, timeout);
        let records = journal::read_records(&study).unwrap();
        print_trials(&records);
        let records: [TrialRecord; 4] = records
            .try_into()
            .unwrap_or_else(|records: Vec<TrialRecord>| panic!("not four records: {records:#?}"));
        let [baseline, refused_by_rules, refused_at_start, served] = &records;

        assert!(baseline.is_baseline());
        assert_served(baseline, &study, self.output_len);
        self.assert_refused_by_rules(refused_by_rules, &study);
        self.assert_refused_at_start(refused_at_start);
        assert_served(served, &study, self.output_len);
        let log = std::fs::read_to_string(study.join("trial-3/server.log")).unwrap();
        for applied in self.served_log {
            assert!(log.contains(applied), "the log of trial 3 lacks {applied}");
        }
        assert_nothing_left(&root, &study, &[0, 3]);
        Finished {
            study,
            records,
            _dir: dir,
        }
    }

    fn assert_refused_by_rules(&self, record: &TrialRecord, study: &Path) {
        match &record.outcome {
            Outcome::Rejected { rule, message } => {
                assert_eq!(rule, self.rule);
                assert!(message.starts_with(self.rule_message), "{message}");
            }
            other => panic!("trial 1 must be refused by the rule pack, got {other:?}"),
        }
        assert!(
            !study.join("trial-1").exists(),
            "a config the rule pack refuses is never started"
        );
    }

    fn assert_refused_at_start(&self, record: &TrialRecord) {
        match &record.outcome {
            Outcome::Failed { kind, message } => {
                assert_eq!(*kind, FailureKind::InvalidConfig, "{message}");
                assert_eq!(message, self.refusal);
            }
            other => panic!("the engine must refuse trial 2 at start, got {other:?}"),
        }
        assert_eq!(record.ready_s, None);
    }
}

/// The text of the shipped space `name` (under search-spaces/).
pub fn shipped_space(name: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(root.join("search-spaces").join(name)).unwrap()
}

/// Runs `infertune tune` (study `e2e`, no pruning) on the space `text`, written in `dir`,
/// checks it finished (0: a winner, 1: no config met the SLO) and returns the study's folder.
pub fn tune(dir: &Path, text: &str, env: &[(String, String)], timeout: Duration) -> PathBuf {
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
    let log = format!(
        "exit: {:?}\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    eprintln!("tune took {:.1} s\n{log}", started.elapsed().as_secs_f64());
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "tune must finish (0: a winner, 1: no config met the SLO)\n{log}"
    );
    results.join("e2e")
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
    let left = processes_under(dir);
    assert!(
        left.is_empty(),
        "server processes outlived the study: {left:?}"
    );
    for number in trials {
        let port = launch_port(&study.join(format!("trial-{number}/launch.json")));
        assert!(
            std::net::TcpListener::bind(("127.0.0.1", port)).is_ok(),
            "port {port} of trial {number} is still taken"
        );
    }
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
/// counter says it generated over the probe (warm-up included), and whose server section
/// (scraped before, during and after the probe) holds that same count.
fn assert_served(record: &TrialRecord, study: &Path, output_len: f64) {
    let n = record.id.number;
    let metric = |name: &str| metric(record, name);
    let measured = assert_probed(record, output_len) * output_len;
    let probed = measured + metric("warmup_output_tokens");
    assert_eq!(
        metric("server_output_tokens"),
        probed,
        "trial {n}: the engine's output-token counter rose by a different count than the probe's"
    );
    let server = record
        .server
        .as_ref()
        .unwrap_or_else(|| panic!("trial {n} has no server section"));
    eprintln!("trial {n} server section: {server:?}");
    assert_eq!(
        server.output_tokens,
        Some(probed),
        "trial {n}: the server section's output tokens are not the counter's increase"
    );
    assert!(
        server.scrapes >= 3,
        "trial {n}: /metrics scraped {} times (before, during, after)",
        server.scrapes
    );
    for figure in [
        "output_tokens",
        "prompt_tokens",
        "running_mean",
        "waiting_peak",
    ] {
        assert!(
            server.sources.contains_key(figure),
            "trial {n}: no engine metric named for `{figure}`: {:?}",
            server.sources
        );
    }
    assert!(study.join(format!("trial-{n}/probe.json")).exists());
}

/// Checks that `record` started and was probed to the end with no failed request, every
/// request producing `output_len` tokens (ignore_eos); returns the requests completed.
pub fn assert_probed(record: &TrialRecord, output_len: f64) -> f64 {
    let n = record.id.number;
    assert!(
        matches!(record.outcome, Outcome::Feasible | Outcome::Infeasible),
        "trial {n} must be served and probed: {:?}",
        record.outcome
    );
    assert!(record.ready_s.is_some(), "trial {n} has no readiness time");
    let metric = |name: &str| metric(record, name);
    assert_eq!(metric("failed"), 0.0, "trial {n}");
    let completed = metric("completed");
    assert!(completed >= 8.0, "trial {n} completed {completed} requests");
    assert!(metric("duration_s") >= 5.0, "trial {n} ran under 5 s");
    let measured = metric("total_output_tokens");
    assert_eq!(measured, completed * output_len, "trial {n}: ignore_eos");
    completed
}

fn metric(record: &TrialRecord, name: &str) -> f64 {
    *record.metrics.get(name).unwrap_or_else(|| {
        panic!(
            "trial {} has no `{name}`: {:?}",
            record.id.number, record.metrics
        )
    })
}

/// Prints each trial's outcome, readiness time and wall time.
pub fn print_trials(records: &[TrialRecord]) {
    for r in records {
        eprintln!(
            "trial {}: {:?}, ready after {:?} s, {:.1} s in all",
            r.id.number, r.outcome, r.ready_s, r.wall_s
        );
    }
}
