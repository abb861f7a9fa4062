//! Seed 004: a random search over `vllm serve` flags on a 2024 vLLM (0.6.3, the V0 engine).
//! Every config vLLM refused at start-up must be refused by the rule pack with vLLM's message,
//! every config that served must pass; on a current V1 release the removed flags are refused.

use infertune::engine::rule_pack;
use infertune::record::{Params, Value};
use infertune::space::{EngineKind, Feasibility, StudySpec};
use std::path::Path;

/// The seed's command lines with vLLM's answer (`None` = it served).
const SEED: &[(&str, Option<&str>)] = &[
    ("vllm serve llm/qwen/Qwen2-0.5B-Instruct --max-num-seqs 6091 --max-num-batched-tokens 535 --block-size 16 --scheduler-delay-factor 0.2361959235060398 --enable-prefix-caching --use-v2-block-manager",
     Some("max_num_batched_tokens (535) is smaller than max_model_len (32768). This effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. Please increase max_num_batched_tokens or decrease max_model_len.")),
    ("vllm serve llm/qwen/Qwen2-0.5B-Instruct --max-num-seqs 1710 --max-num-batched-tokens 5789 --block-size 16 --scheduler-delay-factor 0.6114485564273784 --use-v2-block-manager",
     Some("max_num_batched_tokens (5789) is smaller than max_model_len (32768). This effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. Please increase max_num_batched_tokens or decrease max_model_len.")),
    ("vllm serve llm/qwen/Qwen2-0.5B-Instruct --max-num-seqs 5261 --max-num-batched-tokens 2358 --block-size 16 --scheduler-delay-factor 0.32732642482468033",
     Some("max_num_batched_tokens (2358) is smaller than max_model_len (32768). This effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. Please increase max_num_batched_tokens or decrease max_model_len.")),
    ("vllm serve llm/qwen/Qwen2-0.5B-Instruct --max-num-seqs 4310 --max-num-batched-tokens 2831 --block-size 8 --scheduler-delay-factor 1.1499933118500698 --enable-prefix-caching",
     Some("max_num_batched_tokens (2831) is smaller than max_model_len (32768). This effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. Please increase max_num_batched_tokens or decrease max_model_len.")),
    ("vllm serve llm/qwen/Qwen2-0.5B-Instruct --max-num-seqs 1280 --max-num-batched-tokens 5821 --block-size 16 --scheduler-delay-factor 0.014985929798453146 --enable-prefix-caching",
     Some("max_num_batched_tokens (5821) is smaller than max_model_len (32768). This effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. Please increase max_num_batched_tokens or decrease max_model_len.")),
    ("vllm serve llm/qwen/Qwen2-0.5B-Instruct --max-num-seqs 2134 --max-num-batched-tokens 8185 --block-size 16 --scheduler-delay-factor 1.595473067232271 --enable-prefix-caching",
     Some("max_num_batched_tokens (8185) is smaller than max_model_len (32768). This effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. Please increase max_num_batched_tokens or decrease max_model_len.")),
    ("vllm serve llm/qwen/Qwen2-0.5B-Instruct --max-num-seqs 3563 --max-num-batched-tokens 7472 --block-size 32 --scheduler-delay-factor 1.6759809854478747 --enable-chunked-prefill --enable-prefix-caching --disable-custom-all-reduce --use-v2-block-manager", None),
    ("vllm serve llm/qwen/Qwen2-0.5B-Instruct --max-num-seqs 972 --max-num-batched-tokens 6268 --block-size 32 --scheduler-delay-factor 0.6083402185069822 --enable-chunked-prefill --use-v2-block-manager", None),
    ("vllm serve llm/qwen/Qwen2-0.5B-Instruct --max-num-seqs 1723 --max-num-batched-tokens 5865 --block-size 32 --scheduler-delay-factor 0.2506672920490747 --enable-chunked-prefill --enable-prefix-caching --use-v2-block-manager", None),
];

/// `--a-b 3 --c` → {a_b: 3, c: true}, plus the model's context length (32768 for Qwen2-0.5B).
fn params_of(command: &str) -> Params {
    let words: Vec<&str> = command.split_whitespace().skip(3).collect();
    let mut params = Params::from([("max_model_len".to_string(), Value::Int(32768))]);
    let mut i = 0;
    while i < words.len() {
        let name = words[i].trim_start_matches("--").replace('-', "_");
        let next = words.get(i + 1).filter(|w| !w.starts_with("--"));
        let value = match next {
            Some(w) => {
                i += 1;
                w.parse::<i64>()
                    .map(Value::Int)
                    .unwrap_or_else(|_| Value::Float(w.parse().unwrap()))
            }
            None => Value::Bool(true),
        };
        params.insert(name, value);
        i += 1;
    }
    params
}

#[test]
fn v0_release_refuses_exactly_what_vllm_refused_with_its_message() {
    for (command, refusal) in SEED {
        let verdict = rule_pack(EngineKind::Vllm).check(Some("0.6.3"), None, &params_of(command));
        match (refusal, verdict) {
            (Some(text), Err(r)) => {
                assert_eq!(r.message, *text, "{command}");
                assert_eq!(r.rule, "vllm.batched_tokens_ge_max_model_len");
            }
            (None, Ok(())) => {}
            (expected, got) => panic!("{command}: expected {expected:?}, got {got:?}"),
        }
    }
}

#[test]
fn the_seed_space_refuses_before_any_spawn() {
    let space = StudySpec::load(
        Path::new("tests/fixtures/spaces/seed004.yaml"),
        infertune::engine::rule_pack,
    )
    .unwrap();
    for (command, refusal) in SEED {
        let mut sampled = params_of(command);
        sampled
            .entry("enable_chunked_prefill".into())
            .or_insert(Value::Bool(false));
        for flag in [
            "enable_prefix_caching",
            "use_v2_block_manager",
            "disable_custom_all_reduce",
        ] {
            sampled.entry(flag.into()).or_insert(Value::Bool(false));
        }
        let verdict = space.resolve(&sampled);
        assert_eq!(
            verdict.as_ref().err().map(|r| r.message.as_str()),
            *refusal,
            "{command}"
        );
    }
}

#[test]
fn current_v1_release_refuses_the_removed_flags() {
    for (command, _) in SEED {
        let params = params_of(command);
        let r = rule_pack(EngineKind::Vllm)
            .check(Some("0.11.0"), None, &params)
            .unwrap_err();
        let uses_v2 = params.contains_key("use_v2_block_manager");
        let expected_rule = if uses_v2 {
            "vllm.removed_use_v2_block_manager"
        } else {
            "vllm.removed_scheduler_delay_factor"
        };
        assert_eq!(r.rule, expected_rule, "{command}");
        assert!(
            r.message
                .starts_with("vllm: error: unrecognized arguments: --"),
            "{}",
            r.message
        );
    }
    let mut without = params_of(SEED[7].0);
    without.remove("use_v2_block_manager");
    let r = rule_pack(EngineKind::Vllm)
        .check(Some("0.11.0"), None, &without)
        .unwrap_err();
    assert_eq!(
        r.message,
        "vllm: error: unrecognized arguments: --scheduler-delay-factor 0.6083402185069822"
    );
    without.remove("scheduler_delay_factor");
    assert_eq!(
        rule_pack(EngineKind::Vllm).check(Some("0.11.0"), None, &without),
        Ok(())
    );
}

#[test]
fn on_v1_chunked_prefill_defaults_on_so_the_seed_refusals_would_pass() {
    let mut params = params_of(SEED[4].0);
    params.remove("scheduler_delay_factor");
    assert_eq!(
        rule_pack(EngineKind::Vllm).check(Some("0.11.0"), None, &params),
        Ok(())
    );
    params.insert("enable_chunked_prefill".into(), Value::Bool(false));
    let r = rule_pack(EngineKind::Vllm)
        .check(Some("0.11.0"), None, &params)
        .unwrap_err();
    assert_eq!(r.rule, "vllm.batched_tokens_ge_max_model_len");
}
