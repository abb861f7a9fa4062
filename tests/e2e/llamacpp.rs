//! End to end on a real engine: `infertune tune` drives a CPU build of llama.cpp's
//! `llama-server` (provisioned by scripts/provision-llamacpp.sh) through the shipped space
//! `search-spaces/llamacpp-cpu.yaml`, with the harness's four trials ([`FourTrials`]).
//!
//! A llama.cpp start takes about a second here, so the test takes well under a minute, most of
//! it the probes. It needs llama.cpp built, so it is ignored in the fast tier; scripts/test.sh
//! provisions it and runs it (see `kit::provisioned`).

use crate::kit::provisioned;
use crate::real_engine::{env_path, replace_sections, shipped_space, FourTrials};
use infertune::engine::rule_pack;
use infertune::record::{Params, Value};
use infertune::space::EngineKind;
use std::time::Duration;

/// The test's changes to the shipped space: batch sizes go down to 4 (and the space's own
/// constraints go), so the first queued config has a batch below its 8 slots, which the rule
/// pack refuses; the cache-type rule is off, so llama.cpp itself refuses the second; no
/// sampling and no re-validation (four trials).
const SHIPPED_BATCHES: &str = "values: [128, 256, 512, 2048], flag: --batch-size";
const TEST_BATCHES: &str = "values: [4, 128, 256, 512, 2048], flag: --batch-size";
const RULES: &str = "\
rules:
  platform: cpu
  disable: [llamacpp.quantized_v_cache_needs_flash_attn]
";
const SEARCH: &str = "\
search:
  trials: 4
  seed: 1
  revalidate_top: 0
  enqueue:
    - {parallel: 8, batch_size: 4}
    - {flash_attn: \"off\", cache_type_v: q8_0}
    - {threads: 2, threads_batch: 2, parallel: 4, batch_size: 512, ubatch_size: 128, flash_attn: \"on\", cache_type_k: q8_0, cache_type_v: q8_0}
";

#[test]
#[ignore = "needs a CPU build of llama.cpp: run scripts/test.sh, which provisions it"]
fn tune_drives_the_real_cpu_llama_server() {
    let Some(env) = provisioned::or_skip(
        provisioned_env(),
        "INFERTUNE_REQUIRE_LLAMACPP",
        "run scripts/provision-llamacpp.sh first",
    ) else {
        return;
    };
    let shipped = shipped_space("llamacpp-cpu.yaml");
    assert!(
        shipped.contains(SHIPPED_BATCHES),
        "the shipped batch sizes changed"
    );
    let space = replace_sections(
        &shipped.replace(SHIPPED_BATCHES, TEST_BATCHES),
        &[("constraints", ""), ("rules", RULES), ("search", SEARCH)],
    );
    let refusal = "llama_init_from_model: quantized V cache requires flash_attn to be enabled";
    let done = FourTrials {
        rule: "llamacpp.batch_covers_slots",
        rule_message: "GGML_ASSERT(n_outputs_max <= cparams.n_outputs_max) failed",
        refusal,
        // --parallel 4 with --ctx-size 2048.
        served_log: &["n_slots = 4, n_ctx_slot = 512"],
        output_len: 64.0,
    }
    .run(&space, &env, Duration::from_secs(10 * 60));

    assert_eq!(
        pack_refusal(&done.records[2].params),
        refusal,
        "the rule switched off here words the refusal as the server does"
    );
}

/// The provisioned llama-server's environment, or why there is none.
fn provisioned_env() -> Result<Vec<(String, String)>, String> {
    let scripts = ["scripts/vllm-env.sh", "scripts/llamacpp-env.sh"];
    let keys = [
        "INFERTUNE_VLLM_MODEL",
        "INFERTUNE_LLAMACPP_DIR",
        "INFERTUNE_LLAMACPP_BIN",
        "INFERTUNE_LLAMACPP_MODEL_F16",
    ];
    crate::real_engine::provisioned("llama.cpp", &scripts, &keys, |env| {
        vec![
            env_path(env, "INFERTUNE_LLAMACPP_DIR").join("bin/.complete"),
            env_path(env, "INFERTUNE_LLAMACPP_BIN"),
            env_path(env, "INFERTUNE_LLAMACPP_MODEL_F16"),
            env_path(env, "INFERTUNE_VLLM_MODEL").join("tokenizer.json"),
        ]
    })
}

/// The message of the pack's rule for a quantized V cache, for `params`.
fn pack_refusal(params: &Params) -> String {
    let mut config = params.clone();
    config.retain(|k, _| k == "flash_attn" || k == "cache_type_v");
    assert_eq!(config["cache_type_v"], Value::Str("q8_0".into()));
    rule_pack(EngineKind::Llamacpp)
        .check(None, Some("cpu"), &config)
        .expect_err("the pack refuses a quantized V cache without flash attention")
        .message
}
