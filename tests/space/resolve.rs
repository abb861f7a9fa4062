//! Completing sampled configs: consts, derived values, `when`, constraints, rules and repair.

use infertune::engine::rule_pack;
use infertune::record::{Params, Value};
use infertune::space::{EngineKind, Feasibility, StudySpec};
use std::io::Write;

const TAIL: &str = "probe:
  dataset: {kind: random, input_len: 64, output_len: 16}
  load: {kind: closed, concurrency: 2, requests: 4}
objective:
  metric: output_throughput
";

fn space(body: &str) -> StudySpec {
    let mut file = tempfile::Builder::new().suffix(".yaml").tempfile().unwrap();
    write!(
        file,
        "engine:\n  kind: vllm\n  version: \"0.11.0\"\n  model: m\n{body}{TAIL}"
    )
    .unwrap();
    StudySpec::load(file.path(), infertune::engine::rule_pack).unwrap()
}

use infertune::record::params_of as params;

#[test]
fn consts_and_derived_values_are_filled_in_order() {
    let s = space(
        "parameters:
  max_model_len: {type: const, value: 1024, internal: true}
  max_num_seqs: {type: int, low: 1, high: 64}
  max_num_batched_tokens: {type: derived, expr: \"max(max_model_len, 2048)\"}
  half: {type: derived, expr: \"max_num_batched_tokens / 2\"}
",
    );
    let got = s
        .resolve(&params(&[("max_num_seqs", Value::Int(8))]))
        .unwrap();
    assert_eq!(got["max_model_len"], Value::Int(1024));
    assert_eq!(got["max_num_batched_tokens"], Value::Int(2048));
    assert_eq!(got["half"], Value::Int(1024));
    assert_eq!(got["max_num_seqs"], Value::Int(8));
}

#[test]
fn when_false_drops_the_parameter_and_ignores_its_sampled_value() {
    let s = space(
        "parameters:
  enable_chunked_prefill: {type: bool}
  long_prefill_token_threshold: {type: int, low: 0, high: 512, when: enable_chunked_prefill}
  max_num_partial_prefills: {type: int, low: 1, high: 1, when: long_prefill_token_threshold > 256}
",
    );
    let sampled = params(&[
        ("enable_chunked_prefill", Value::Bool(false)),
        ("long_prefill_token_threshold", Value::Int(300)),
        ("max_num_partial_prefills", Value::Int(1)),
    ]);
    let off = s.resolve(&sampled).unwrap();
    assert_eq!(
        off,
        params(&[("enable_chunked_prefill", Value::Bool(false))])
    );
    let mut on = sampled.clone();
    on.insert("enable_chunked_prefill".into(), Value::Bool(true));
    assert_eq!(s.resolve(&on).unwrap().len(), 3);
    on.insert("long_prefill_token_threshold".into(), Value::Int(100));
    assert!(!s
        .resolve(&on)
        .unwrap()
        .contains_key("max_num_partial_prefills"));
}

#[test]
fn constraints_reject_by_name_and_skip_inactive_parameters() {
    let s = space(
        "parameters:
  a: {type: int, low: 1, high: 10}
  b: {type: int, low: 1, high: 10, when: a > 5}
constraints:
  - name: b_above_a
    expr: b > a
",
    );
    let r = s
        .resolve(&params(&[("a", Value::Int(7)), ("b", Value::Int(3))]))
        .unwrap_err();
    assert_eq!(r.rule, "b_above_a");
    assert!(s
        .resolve(&params(&[("a", Value::Int(2)), ("b", Value::Int(1))]))
        .is_ok());
}

#[test]
fn out_of_domain_and_missing_values_are_refused() {
    let s = space(
        "parameters:\n  a: {type: int, low: 1, high: 10}\n  n: {type: numa, candidates: auto}\n",
    );
    assert!(s.resolve(&params(&[("a", Value::Int(11))])).is_err());
    assert_eq!(s.resolve(&Params::new()).unwrap_err().rule, "a");
    let got = s.resolve(&params(&[("a", Value::Float(4.0))])).unwrap();
    assert_eq!(got["a"], Value::Int(4));
    assert_eq!(
        got["n"],
        Value::Str("none".into()),
        "no binding when the sampler gave none"
    );
}

#[test]
fn repair_clamps_instead_of_rejecting() {
    let body = "parameters:
  max_model_len: {type: const, value: 4096, internal: true}
  max_num_seqs: {type: int, low: 1, high: 512}
  max_num_batched_tokens: {type: int, low: 64, high: 8192}
  enable_chunked_prefill: {type: bool}
  gpu_memory_utilization: {type: float, low: 0.5, high: 1.2}
";
    let sampled = params(&[
        ("max_num_seqs", Value::Int(512)),
        ("max_num_batched_tokens", Value::Int(256)),
        ("enable_chunked_prefill", Value::Bool(false)),
        ("gpu_memory_utilization", Value::Float(1.1)),
    ]);
    let strict = space(body);
    assert_eq!(
        strict.resolve(&sampled).unwrap_err().rule,
        "vllm.gpu_memory_utilization_range"
    );
    let lenient = space(&format!("rules: {{repair: true}}\n{body}"));
    let got = lenient.resolve(&sampled).unwrap();
    assert_eq!(got["gpu_memory_utilization"], Value::Float(1.0));
    assert_eq!(got["max_num_batched_tokens"], Value::Int(4096));
    assert_eq!(got["max_num_seqs"], Value::Int(512));
    let disabled = space(&format!(
        "rules: {{disable: [vllm.gpu_memory_utilization_range]}}\n{body}"
    ));
    assert_eq!(
        disabled.resolve(&sampled).unwrap_err().rule,
        "vllm.batched_tokens_ge_max_model_len"
    );
}

#[test]
fn rules_follow_versions_and_platforms() {
    let bs = |b: i64| params(&[("block_size", Value::Int(b))]);
    let check =
        |v: &str, p: Option<&str>, b: i64| rule_pack(EngineKind::Vllm).check(Some(v), p, &bs(b));
    assert_eq!(
        check("0.6.3", None, 64).unwrap_err().message,
        "argument --block-size: invalid choice: 64 (choose from 8, 16, 32)"
    );
    assert_eq!(
        check("0.11.0", None, 64).unwrap_err().rule,
        "vllm.block_size_cuda_le_32"
    );
    assert_eq!(
        check("0.32.0+cpu", None, 16).unwrap_err().message,
        "No common block size for 16 (CPU_ATTN: [MultipleOf(32)])"
    );
    assert!(check("0.32.0", Some("cpu"), 128).is_ok());
    let mut repaired = bs(48);
    rule_pack(EngineKind::Vllm).repair(Some("0.32.0+cpu"), None, &mut repaired, &[]);
    assert_eq!(repaired["block_size"], Value::Int(64));
}
