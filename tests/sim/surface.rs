//! The simulated landscape is not flat: batch size, load, prefill policy, prefix caching and
//! memory all move the metrics the way they move a real engine's.

use crate::kit::sim_common;

use infertune::probe::{DatasetSpec, LoadSpec};
use infertune::record::params_of as params;
use infertune::record::{FailureKind, Value};
use infertune::sim::eval;
use infertune::space::EngineKind;
use sim_common::{closed, deployment};

#[test]
fn throughput_rises_then_falls_with_max_num_seqs_under_kv_pressure() {
    let d = deployment(EngineKind::Vllm, None, "A100-40", "Qwen2.5-7B", 1);
    let workload = closed(256, 1536, 0.3, 512, 400);
    let tput = |seqs: i64| {
        let p = params(&[
            ("max_num_seqs", Value::Int(seqs)),
            ("gpu_memory_utilization", Value::Float(0.6)),
            ("max_model_len", Value::Int(4096)),
        ]);
        eval(&d, &p, &workload, 3).unwrap()["output_throughput"]
    };
    let (small, mid, large) = (tput(32), tput(128), tput(512));
    assert!(mid > 1.3 * small, "batching helps: {small} → {mid}");
    assert!(
        large < 0.95 * mid,
        "preemption and recompute hurt: {mid} → {large}"
    );
}

#[test]
fn p99_ttft_grows_with_load() {
    let d = deployment(EngineKind::Vllm, None, "H100", "Qwen2.5-7B", 1);
    let p99 = |concurrency: u32| {
        eval(
            &d,
            &params(&[]),
            &closed(2048, 256, 0.2, concurrency, 3 * concurrency),
            1,
        )
        .unwrap()["p99_ttft_ms"]
    };
    let (light, medium, heavy) = (p99(4), p99(64), p99(512));
    assert!(light < medium && medium < heavy, "{light} {medium} {heavy}");
    assert!(heavy > 5.0 * light, "{light} {heavy}");
}

#[test]
fn a_small_token_budget_trades_ttft_for_smoother_decoding() {
    let d = deployment(EngineKind::Vllm, None, "H100", "Qwen2.5-14B", 1);
    let workload = closed(6000, 200, 0.2, 32, 128);
    let run = |budget: i64| {
        eval(
            &d,
            &params(&[("max_num_batched_tokens", Value::Int(budget))]),
            &workload,
            1,
        )
        .unwrap()
    };
    let (small, large) = (run(512), run(16384));
    assert!(
        small["mean_ttft_ms"] > 1.5 * large["mean_ttft_ms"],
        "TTFT {} vs {}",
        small["mean_ttft_ms"],
        large["mean_ttft_ms"]
    );
    assert!(
        small["p99_itl_ms"] < large["p99_itl_ms"],
        "ITL {} vs {}",
        small["p99_itl_ms"],
        large["p99_itl_ms"]
    );
}

#[test]
fn prefix_caching_pays_off_with_a_shared_prefix() {
    let d = deployment(EngineKind::Vllm, None, "H100", "Qwen2.5-14B", 1);
    let mut workload = closed(200, 64, 0.0, 64, 256);
    if let DatasetSpec::Random { prefix_len, .. } = &mut workload.dataset {
        *prefix_len = 3000;
    }
    let ttft = |on: bool| {
        eval(
            &d,
            &params(&[("enable_prefix_caching", Value::Bool(on))]),
            &workload,
            1,
        )
        .unwrap()["mean_ttft_ms"]
    };
    let (on, off) = (ttft(true), ttft(false));
    assert!(on < 0.5 * off, "with cache {on} ms, without {off} ms");
}

#[test]
fn some_configs_fail_at_start() {
    let workload = closed(128, 128, 0.0, 4, 8);
    let fail = |card: &str, model: &str, tp: u32, p: &[(&str, Value)]| {
        eval(
            &deployment(EngineKind::Vllm, None, card, model, tp),
            &params(p),
            &workload,
            1,
        )
        .unwrap_err()
    };
    let weights = fail("H100", "Qwen2.5-72B", 1, &[]);
    assert_eq!(weights.kind, FailureKind::Oom);
    let kv = fail(
        "A100-40",
        "Qwen2.5-14B",
        1,
        &[("gpu_memory_utilization", Value::Float(0.75))],
    );
    assert_eq!(kv.kind, FailureKind::Oom, "{kv}");
    let heads = fail("H100", "Qwen2.5-7B", 3, &[]);
    assert_eq!(heads.kind, FailureKind::InvalidConfig);
    let mindie = eval(
        &deployment(EngineKind::Mindie, None, "Ascend-910B4", "Qwen2.5-72B", 2),
        &params(&[]),
        &workload,
        1,
    )
    .unwrap_err();
    assert_eq!(mindie.kind, FailureKind::Oom);
}

#[test]
fn runs_are_deterministic_by_seed_and_noisy_across_seeds() {
    let d = deployment(EngineKind::Vllm, None, "L40S", "Llama-3-8B", 1);
    let workload = closed(512, 128, 0.5, 32, 64);
    let a = eval(&d, &params(&[]), &workload, 11).unwrap();
    let b = eval(&d, &params(&[]), &workload, 11).unwrap();
    let c = eval(&d, &params(&[]), &workload, 12).unwrap();
    assert_eq!(a, b);
    let ratio = a["output_throughput"] / c["output_throughput"];
    assert!(ratio != 1.0 && (0.85..1.15).contains(&ratio), "{ratio}");
}

#[test]
fn text_datasets_are_refused_clearly() {
    let mut workload = closed(1, 1, 0.0, 1, 1);
    workload.dataset = DatasetSpec::Sharegpt {
        path: "sg.json".into(),
        output_len: None,
    };
    let e = eval(
        &deployment(EngineKind::Vllm, None, "H100", "Qwen2.5-7B", 1),
        &params(&[]),
        &workload,
        1,
    )
    .unwrap_err();
    assert_eq!(e.kind, FailureKind::InvalidConfig);
    assert!(
        e.message
            .contains("jsonl and sharegpt prompts need real text"),
        "{e}"
    );
}

#[test]
fn an_open_loop_with_a_concurrency_cap_sends_exactly_the_requests_asked_for() {
    let d = deployment(EngineKind::Vllm, None, "H100", "Qwen2.5-7B", 1);
    let mut workload = closed(512, 64, 0.0, 1, 300);
    workload.load = LoadSpec::Open {
        rate: 20.0,
        burstiness: 1.0,
        max_concurrency: Some(16),
        requests: Some(300),
        duration: None,
    };
    let m = eval(&d, &params(&[]), &workload, 1).unwrap();
    assert_eq!(m["completed"] + m["failed"], 300.0, "{m:?}");
}
