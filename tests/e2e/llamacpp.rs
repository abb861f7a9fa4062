//! End to end on a real engine: `infertune tune` drives a CPU build of llama.cpp's
//! `llama-server` (provisioned by scripts/provision-llamacpp.sh) through the shipped space
//! `search-spaces/llamacpp-cpu.yaml`, with four trials: the baseline, a config the rule pack
//! refuses (never started), a config llama.cpp itself refuses at start (its rule switched off
//! here), and a tuned config that serves.
//!
//! A llama.cpp start takes about a second here, so the test takes well under a minute, most of
//! it the probes. Without a provisioned llama-server it fails when `CI=true` or
//! `INFERTUNE_REQUIRE_LLAMACPP=1`, and is skipped with a loud message otherwise.

use crate::real_engine::{self, all_exist, env_path};
use infertune::engine::rule_pack;
use infertune::record::{FailureKind, Outcome, Params, Value};
use infertune::space::EngineKind;
use std::time::Duration;

/// The variables of scripts/vllm-env.sh and scripts/llamacpp-env.sh the study needs.
const ENV_KEYS: &[&str] = &[
    "INFERTUNE_VLLM_MODEL",
    "INFERTUNE_LLAMACPP_DIR",
    "INFERTUNE_LLAMACPP_BIN",
    "INFERTUNE_LLAMACPP_MODEL_F16",
];

/// Output tokens per request in the shipped space's probe (`output_len`, with ignore_eos).
const OUTPUT_LEN: f64 = 64.0;

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
fn tune_drives_the_real_cpu_llama_server() {
    let env = match provisioned_env() {
        Ok(env) => env,
        Err(why) if real_engine::required("INFERTUNE_REQUIRE_LLAMACPP") => panic!(
            "the real llama.cpp end-to-end test is required here (CI or \
             INFERTUNE_REQUIRE_LLAMACPP=1), but {why}; run scripts/provision-llamacpp.sh first"
        ),
        Err(why) => {
            real_engine::announce_skip(
                "tune_drives_the_real_cpu_llama_server",
                &why,
                "Run scripts/provision-llamacpp.sh (or scripts/test.sh) to run it.",
            );
            return;
        }
    };
    let tmp = tempfile::tempdir().unwrap();
    let tmp_dir = tmp.path().canonicalize().unwrap();
    let shipped = real_engine::shipped_space("llamacpp-cpu.yaml");
    assert!(
        shipped.contains(SHIPPED_BATCHES),
        "the shipped batch sizes changed"
    );
    let space = real_engine::replace_sections(
        &shipped.replace(SHIPPED_BATCHES, TEST_BATCHES),
        &[("constraints", ""), ("rules", RULES), ("search", SEARCH)],
    );
    let run = real_engine::tune(&tmp_dir, &space, &env, Duration::from_secs(10 * 60));
    let [baseline, refused_by_rules, refused_by_server, tuned] = &run.four_records();
    let study = run.study;

    assert!(baseline.baseline);
    real_engine::assert_served(baseline, &study, OUTPUT_LEN);

    match &refused_by_rules.outcome {
        Outcome::Rejected { rule, message } => {
            assert_eq!(rule, "llamacpp.batch_covers_slots");
            assert!(
                message.starts_with("GGML_ASSERT(n_outputs_max <= cparams.n_outputs_max) failed"),
                "{message}"
            );
        }
        other => panic!("trial 1 must be refused before it starts, got {other:?}"),
    }
    assert!(
        !study.join("trial-1").exists(),
        "a config the rule pack refuses is never started"
    );

    match &refused_by_server.outcome {
        Outcome::Failed { kind, message } => {
            assert_eq!(*kind, FailureKind::InvalidConfig, "{message}");
            assert_eq!(
                message,
                "llama_init_from_model: quantized V cache requires flash_attn to be enabled"
            );
            assert_eq!(
                *message,
                pack_refusal(&refused_by_server.params),
                "the rule switched off here words the refusal as the server does"
            );
        }
        other => panic!("llama.cpp must refuse trial 2 at start, got {other:?}"),
    }
    assert_eq!(refused_by_server.ready_s, None);

    real_engine::assert_served(tuned, &study, OUTPUT_LEN);
    let tuned_log = std::fs::read_to_string(study.join("trial-3/server.log")).unwrap();
    assert!(
        tuned_log.contains("n_slots = 4, n_ctx_slot = 512"),
        "llama-server did not apply --parallel 4 with --ctx-size 2048"
    );

    eprintln!("the study took {:.1} s", run.wall.as_secs_f64());
    real_engine::assert_nothing_left(&tmp_dir, &study, &[0, 3]);
}

/// The provisioned llama-server's environment, or why there is none.
fn provisioned_env() -> Result<Vec<(String, String)>, String> {
    let env = real_engine::sourced_env(
        &["scripts/vllm-env.sh", "scripts/llamacpp-env.sh"],
        ENV_KEYS,
    )?;
    all_exist(
        "llama.cpp",
        &[
            env_path(&env, "INFERTUNE_LLAMACPP_DIR").join("bin/.complete"),
            env_path(&env, "INFERTUNE_LLAMACPP_BIN"),
            env_path(&env, "INFERTUNE_LLAMACPP_MODEL_F16"),
            env_path(&env, "INFERTUNE_VLLM_MODEL").join("tokenizer.json"),
        ],
    )?;
    Ok(env)
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
