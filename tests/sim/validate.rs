//! `infertune sim validate` against the public measurements of a real vLLM on an H100
//! (`data/sim-truth`), and `--model-config` with a config.json.

use assert_cmd::Command;
use std::path::PathBuf;
use std::process::Output;

fn truth_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/sim-truth");
    assert!(
        dir.join("h100-vllm.csv").is_file(),
        "{} has no h100-vllm.csv",
        dir.display()
    );
    dir
}

/// Runs validate on the truth file.
fn validate_json() -> serde_json::Value {
    let dir = truth_dir();
    let out = Command::cargo_bin("infertune")
        .unwrap()
        .args(["sim", "validate", "--json", "--truth"])
        .arg(dir.join("h100-vllm.csv"))
        .arg("--model-configs")
        .arg(dir.join("model-configs"))
        .output()
        .unwrap();
    json_of(&out)
}

/// The JSON a successful run printed.
fn json_of(out: &Output) -> serde_json::Value {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn every_row_is_predicted_and_only_the_overloaded_rows_overload() {
    let v = validate_json();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 18);
    for row in rows {
        let experiment = row["experiment"].as_str().unwrap();
        let overloaded = row["overloaded"].as_bool().unwrap();
        assert_eq!(overloaded, experiment.ends_with("reasoning"), "{row}");
        for column in [
            "ttft_mean_ms",
            "ttft_p90_ms",
            "tpot_mean_ms",
            "e2e_mean_s",
            "output_tok_s",
        ] {
            assert!(
                row["predicted"][column].as_f64().unwrap() > 0.0,
                "{column}: {row}"
            );
        }
    }
}

#[test]
fn a_model_config_file_runs_and_a_bad_one_names_the_field() {
    let eval = |config: &std::path::Path, tp: &str| {
        Command::cargo_bin("infertune")
            .unwrap()
            .args([
                "sim",
                "eval",
                "--card",
                "H100",
                "--tp",
                tp,
                "--requests",
                "8",
                "--json",
            ])
            .args(["--input-len", "256", "--output-len", "16", "--model-config"])
            .arg(config)
            .output()
            .unwrap()
    };
    let mixtral =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/sim/profiles/models/Mixtral-8x7B.json");
    assert_eq!(json_of(&eval(&mixtral, "2"))["metrics"]["completed"], 8.0);
    let out = eval(&mixtral, "3");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let message = v["failure"]["message"].as_str().unwrap();
    assert!(message.contains("num_attention_heads"), "{message}");
}

/// A model-config folder under `dir` holding the shipped Qwen2.5-0.5B config.
fn qwen_configs(dir: &std::path::Path) -> PathBuf {
    let configs = dir.join("configs");
    std::fs::create_dir(&configs).unwrap();
    let shipped = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/sim/profiles/models");
    std::fs::copy(
        shipped.join("Qwen2.5-0.5B.json"),
        configs.join("Qwen2.5-0.5B.json"),
    )
    .unwrap();
    configs
}

#[test]
fn a_row_the_simulator_cannot_model_is_listed_and_the_rest_are_predicted() {
    let dir = tempfile::tempdir().unwrap();
    let configs = qwen_configs(dir.path());
    std::fs::write(
        configs.join("Made-Up-1B.json"),
        r#"{"architectures": ["MadeUpForCausalLM"], "hidden_size": 1024}"#,
    )
    .unwrap();
    let truth = dir.path().join("truth.csv");
    let header = "experiment,stage,model,tp,max_model_len,max_num_batched_tokens,max_num_seqs,\
                  system_prompt_len,question_len,output_len,num_groups,prompts_per_group,\
                  multi_turn,rate,duration_s,ttft_mean_ms,output_tok_s";
    let row = |experiment: &str, model: &str| {
        format!("{experiment},0,{model},1,4096,2048,64,100,200,50,4,4,True,2.0,30,50.0,100.0")
    };
    std::fs::write(
        &truth,
        format!(
            "{header}\n{}\n{}\n",
            row("made-up", "org/Made-Up-1B"),
            row("qwen", "Qwen/Qwen2.5-0.5B")
        ),
    )
    .unwrap();
    let validate = |json: bool| {
        let mut cmd = Command::cargo_bin("infertune").unwrap();
        cmd.args(["sim", "validate", "--truth"])
            .arg(&truth)
            .arg("--model-configs")
            .arg(&configs);
        if json {
            cmd.arg("--json");
        }
        cmd.output().unwrap()
    };
    let v = json_of(&validate(true));
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{v}");
    assert_eq!(rows[0]["experiment"], "qwen");
    let unmodelled = v["unmodelled"].as_array().unwrap();
    assert_eq!(unmodelled.len(), 1, "{v}");
    assert_eq!(unmodelled[0]["experiment"], "made-up");
    let reason = unmodelled[0]["reason"].as_str().unwrap();
    assert!(reason.contains("MadeUpForCausalLM"), "{reason}");
    let out = validate(false);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("rows modelled: 1 of 2; not modelled: 1"),
        "{text}"
    );
    assert!(text.contains("made-up stage 0 (line 2): "), "{text}");
}

#[test]
fn memory_share_data_parallel_and_cpu_offload_columns_are_read_where_present() {
    let dir = tempfile::tempdir().unwrap();
    let configs = qwen_configs(dir.path());
    let truth = dir.path().join("truth.csv");
    let header = "experiment,stage,model,tp,dp,gpu_memory_utilization,cpu_offload_gb,\
                  max_model_len,max_num_batched_tokens,max_num_seqs,system_prompt_len,\
                  question_len,output_len,num_groups,prompts_per_group,multi_turn,rate,\
                  duration_s,ttft_mean_ms,output_tok_s";
    // One replica serving one request at a time at 1 request/s; two at 2 (each sees 1, where
    // one alone would queue); a memory share below the weights'; weights offloaded to the host.
    let rows = [
        ("one", "1", "0.9", "0", "1.0"),
        ("two", "2", "0.9", "", "2.0"),
        ("starved", "1", "0.001", "0", "1.0"),
        ("offload", "1", "0.9", "4", "1.0"),
    ]
    .map(|(experiment, dp, share, offload, rate)| {
        format!(
            "{experiment},0,Qwen/Qwen2.5-0.5B,1,{dp},{share},{offload},4096,2048,1,100,200,500,\
             4,4,True,{rate},30,50.0,100.0"
        )
    });
    std::fs::write(&truth, format!("{header}\n{}\n", rows.join("\n"))).unwrap();
    let out = Command::cargo_bin("infertune")
        .unwrap()
        .args(["sim", "validate", "--json", "--truth"])
        .arg(&truth)
        .arg("--model-configs")
        .arg(&configs)
        .output()
        .unwrap();
    let v = json_of(&out);
    let predicted = |experiment: &str, column: &str| {
        v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["experiment"] == experiment)
            .unwrap_or_else(|| panic!("{experiment} not predicted: {v}"))["predicted"][column]
            .as_f64()
            .unwrap()
    };
    let ratio = predicted("two", "output_tok_s") / predicted("one", "output_tok_s");
    assert!((ratio - 2.0).abs() < 0.3, "two replicas: ×{ratio:.2}");
    let (ttft_one, ttft_two) = (
        predicted("one", "ttft_mean_ms"),
        predicted("two", "ttft_mean_ms"),
    );
    assert!(
        ttft_two < 1.5 * ttft_one,
        "two replicas queue as one would: TTFT {ttft_two:.0} ms against {ttft_one:.0} ms"
    );
    let reason = |experiment: &str| {
        v["unmodelled"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["experiment"] == experiment)
            .unwrap_or_else(|| panic!("{experiment} not listed as unmodelled: {v}"))["reason"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let starved = reason("starved");
    assert!(starved.contains("gpu_memory_utilization"), "{starved}");
    let offload = reason("offload");
    assert!(offload.contains("cpu_offload_gb"), "{offload}");
}
