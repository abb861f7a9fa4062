//! End to end on a real XInference: `infertune tune` drives XInference 4.1.0 on its llama.cpp
//! engine (provisioned by scripts/provision-xinference.sh over the CPU vLLM venv) through the
//! shipped space `search-spaces/xinference-cpu.yaml`, serving the tiny GGUF.
//!
//! Four trials: the baseline; a config the rule pack refuses (two replicas of llama.cpp, each
//! with a thread per core); `replica: 2`, which must serve only once both replicas are READY
//! (every probe request answered, none a 503 from a replica still loading); and a tuned config.
//! Before them, `infertune check` must refuse a misspelt setting by the catalogue. Each
//! XInference start takes one to two minutes here (three processes import torch), so the test
//! takes five to seven minutes; it is ignored in the fast tier and required by scripts/test.sh.

use crate::kit::provisioned;
use crate::real_engine::{
    assert_nothing_left, assert_probed, env_path, print_trials, provisioned, replace_sections,
    shipped_space, tune,
};
use infertune::record::{Outcome, TrialRecord};
use infertune::study::journal;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

const SHIPPED_THREADS: &str = "n_threads:       {type: choice, values: [1, 2], default: 2}";
const SHIPPED_REPLICAS: &str = "replica:         {type: choice, values: [1, 2], default: 1}";
/// Output tokens per request of the shipped probe (`output_len`, with ignore_eos).
const OUTPUT_LEN: f64 = 64.0;

#[test]
#[ignore = "needs XInference (scripts/provision-xinference.sh)"]
fn tune_drives_a_real_xinference_on_llama_cpp() {
    let Some(env) = provisioned::or_skip(
        provisioned_env(),
        "INFERTUNE_REQUIRE_XINFERENCE",
        "run scripts/provision-xinference.sh first",
    ) else {
        return;
    };
    let cores = std::thread::available_parallelism().unwrap().get();
    let shipped = shipped_space("xinference-cpu.yaml");
    assert!(shipped.contains(SHIPPED_THREADS) && shipped.contains(SHIPPED_REPLICAS));
    // Two replicas with a thread per core each is refused whatever the host's cores.
    let threads = format!("n_threads: {{type: choice, values: [1, {cores}], default: {cores}}}");
    let search = format!(
        "search:\n  trials: 4\n  seed: 1\n  revalidate_top: 0\n  enqueue:\n    \
         - {{replica: 2, n_threads: {cores}}}\n    \
         - {{replica: 2, n_threads: 1}}\n    \
         - {{quantization: f16, n_ctx: 4096, n_parallel: 4, n_batch: 512, n_ubatch: 128, \
         flash_attn_type: 1, cache_type_k: 8, n_threads: 1}}\n"
    );
    let space = replace_sections(
        &shipped.replace(SHIPPED_THREADS, &threads),
        &[("search", &search)],
    );

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    misspelt_setting_is_refused_by_the_catalogue(&root, &space, &env);

    let before = xinf_folders();
    let study = tune(&root, &space, &env, Duration::from_secs(20 * 60));
    let records = journal::read_records(&study).unwrap();
    print_trials(&records);
    let [baseline, refused, replicas, tuned]: [TrialRecord; 4] = records
        .try_into()
        .unwrap_or_else(|r: Vec<TrialRecord>| panic!("not four records: {r:#?}"));

    assert!(baseline.is_baseline());
    match &refused.outcome {
        Outcome::Rejected { rule, message } => {
            assert_eq!(rule, "xinference.replica_threads_within_cores");
            assert!(
                message.starts_with(&format!("replica (2) × n_threads ({cores})")),
                "{message}"
            );
        }
        other => panic!("trial 1 must be refused by the rule pack, got {other:?}"),
    }
    assert!(
        !study.join("trial-1").exists(),
        "a refused config is never started"
    );
    for record in [&baseline, &replicas, &tuned] {
        assert_served(record, &study);
    }
    let log =
        |n: u32| std::fs::read_to_string(study.join(format!("trial-{n}/server.log"))).unwrap();
    let two = log(2);
    assert!(
        two.contains("replicas of tiny: ['READY', 'READY']")
            && two.contains("every replica of tiny is READY"),
        "trial 2 must have waited for both replicas:\n{two}"
    );
    // The tuned settings reached llama.cpp (it splits n_ctx over the n_parallel slots).
    let three = log(3);
    assert!(
        three.contains("n_ctx_slot = 1024"),
        "trial 3 lacks its slots:\n{three}"
    );
    assert_best_sh_runs_the_three_commands(&study);
    assert_nothing_left(&root, &study, &[0, 2, 3]);
    for n in [0, 2, 3] {
        let home = study.join(format!("trial-{n}/xinference/home"));
        assert_eq!(processes_with_home(&home), Vec::<i32>::new(), "trial {n}");
    }
    let left: Vec<_> = xinf_folders().difference(&before).cloned().collect();
    assert!(left.is_empty(), "XInference folders left in /tmp: {left:?}");
}

/// The winner's `best.sh` writes the launch script of XInference's three plain commands (server,
/// registration, launch) and runs it; bash accepts both.
fn assert_best_sh_runs_the_three_commands(study: &Path) {
    let best = std::fs::read_to_string(study.join("best.sh")).unwrap();
    let at = |needle: &str| {
        best.find(needle)
            .unwrap_or_else(|| panic!("best.sh lacks {needle}:\n{best}"))
    };
    let (server, register, launch) = (
        at("bin/xinference-local --host 127.0.0.1 --port "),
        at("bin/xinference register -e http://127.0.0.1:"),
        at("bin/xinference launch -e http://127.0.0.1:"),
    );
    assert!(server < register && register < launch, "{best}");
    assert!(best.lines().last().unwrap().contains("bash "), "{best}");
    let syntax = std::process::Command::new("bash")
        .arg("-n")
        .arg(study.join("best.sh"))
        .status()
        .unwrap();
    assert!(syntax.success(), "{best}");
}

/// `infertune check` refuses a misspelt llama.cpp setting by the catalogue, naming the setting.
fn misspelt_setting_is_refused_by_the_catalogue(dir: &Path, space: &str, env: &[(String, String)]) {
    let path = dir.join("misspelt.yaml");
    // Everywhere the space names it (its declaration, constraints, enqueued configs).
    let misspelt = space.replace("n_parallel", "n_paralel");
    std::fs::write(&path, misspelt).unwrap();
    let out = assert_cmd::Command::cargo_bin("infertune")
        .unwrap()
        .args(["check", "--samples", "10", "--space"])
        .arg(&path)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("parameter `n_paralel` is passed as the launch setting `n_paralel`, which xinference 4.1.0 does not have; did you mean `n_parallel`?"),
        "{stderr}"
    );
}

/// A trial served and probed to the end with no failed request (a 503 from a replica still
/// loading would be one), each request the probe's full output length (ignore_eos), every
/// request's count taken from the server's `usage`.
fn assert_served(record: &TrialRecord, study: &Path) {
    let n = record.id.number;
    if let Outcome::Failed { .. } = record.outcome {
        let log = std::fs::read_to_string(study.join(format!("trial-{n}/server.log")))
            .unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(80).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        panic!(
            "trial {n} failed: {:?}\nthe end of its server log:\n{}",
            record.outcome,
            tail.join("\n")
        );
    }
    let completed = assert_probed(record, OUTPUT_LEN);
    let probe: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(study.join(format!("trial-{n}/probe.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(
        probe["output_tokens_source"],
        serde_json::json!({"usage": completed as u64}),
        "trial {n}: every request's count must come from the server's usage"
    );
}

/// Processes whose environment points XInference at `home`: every process of that trial.
fn processes_with_home(home: &Path) -> Vec<i32> {
    let needle = format!("XINFERENCE_HOME={}", home.display());
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == needle.as_bytes()))
        })
        .collect()
}

/// XInference's folders in /tmp (its socket folder is always there, whatever TMPDIR says).
fn xinf_folders() -> BTreeSet<String> {
    std::fs::read_dir("/tmp")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| name.starts_with("xinf-"))
        .collect()
}

/// The provisioned XInference's environment, or why there is none.
fn provisioned_env() -> Result<Vec<(String, String)>, String> {
    let scripts = [
        "scripts/vllm-env.sh",
        "scripts/llamacpp-env.sh",
        "scripts/xinference-env.sh",
    ];
    let keys = [
        "INFERTUNE_VLLM_MODEL",
        "INFERTUNE_LLAMACPP_MODEL_Q8",
        "INFERTUNE_XINFERENCE_VENV",
        "INFERTUNE_XINFERENCE_BIN",
    ];
    provisioned("XInference", &scripts, &keys, |env| {
        vec![
            env_path(env, "INFERTUNE_XINFERENCE_VENV").join(".complete"),
            env_path(env, "INFERTUNE_XINFERENCE_BIN"),
            env_path(env, "INFERTUNE_LLAMACPP_MODEL_Q8"),
            env_path(env, "INFERTUNE_VLLM_MODEL").join("tokenizer.json"),
        ]
    })
}

/// The model cache links the launch script's gate makes are where XInference itself looks: a
/// replica finding its link made skips making it, so two replicas no longer race for it.
#[test]
#[ignore = "needs XInference (scripts/provision-xinference.sh)"]
fn the_gate_links_the_model_cache_where_each_replica_looks_for_it() {
    let Some(env) = provisioned::or_skip(
        provisioned_env(),
        "INFERTUNE_REQUIRE_XINFERENCE",
        "run scripts/provision-xinference.sh first",
    ) else {
        return;
    };
    let python = env_path(&env, "INFERTUNE_XINFERENCE_VENV").join("bin/python");
    let dir = tempfile::tempdir().unwrap();
    let (home, model) = (dir.path().join("home"), dir.path().join("model"));
    std::fs::create_dir_all(&model).unwrap();
    let spec = |quantization: &str| {
        serde_json::json!({
            "model_format": "ggufv2", "model_size_in_billions": "0_01",
            "quantization": quantization, "model_uri": format!("file://{}", model.display()),
        })
    };
    let family = dir.path().join("model.json");
    let body = serde_json::json!({
        "model_name": "infertune-tiny.v1",
        "model_specs": [spec("q8_0"), spec("f16")],
    });
    std::fs::write(&family, body.to_string()).unwrap();
    let gate = dir.path().join("gate.py");
    std::fs::write(&gate, include_str!("../../src/engine/xinference/gate.py")).unwrap();
    for _ in 0..2 {
        let linked = std::process::Command::new(&python)
            .arg(&gate)
            .arg("link")
            .arg(&family)
            .env("XINFERENCE_HOME", &home)
            .output()
            .unwrap();
        assert!(linked.status.success(), "{linked:?}");
    }
    const WHERE: &str = "import json, os, sys, types\n\
        from xinference.model.llm.cache_manager import LLMCacheManager\n\
        family = json.load(open(sys.argv[1]))\n\
        for spec in family['model_specs']:\n\
        \x20   path = LLMCacheManager.get_cache_dir_for_spec(family['model_name'], \
        types.SimpleNamespace(**spec))\n\
        \x20   print(os.path.islink(path), os.path.realpath(path))\n";
    let looked = std::process::Command::new(&python)
        .args(["-c", WHERE])
        .arg(&family)
        .env("XINFERENCE_HOME", &home)
        .output()
        .unwrap();
    assert!(looked.status.success(), "{looked:?}");
    let model = model.canonicalize().unwrap();
    let expected = format!("True {}\n", model.display()).repeat(2);
    assert_eq!(String::from_utf8_lossy(&looked.stdout), expected);
}
