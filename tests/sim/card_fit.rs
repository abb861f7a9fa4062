//! `infertune sim calibrate`: a card profile fitted to measurements, and `--card FILE` reading
//! one. The measurements here are the twin's own on a card scaled away from the H100 profile,
//! so the figures it must recover are known.

use assert_cmd::Command;
use std::path::{Path, PathBuf};

/// The H100 profile of cards.yaml with compute, bandwidth and host speed scaled.
fn scaled_h100(compute: f64, bandwidth: f64, host: f64) -> String {
    format!(
        "name: H100-test\nplatform: cuda\nmemory_gib: 79.2\ntflops: {}\nhbm_gbps: {}\n\
         bf16: true\nhost_factor: {}\nboard_w: 700\nlink: {{ gbps: 450, latency_us: 4 }}\n\
         host: {{ nodes: 2, local_node: 0, remote_distance: 21 }}\n",
        989.0 * compute,
        3350.0 * bandwidth,
        1.0 / host
    )
}

const HEADER: &str = "experiment,stage,model,tp,max_model_len,max_num_batched_tokens,\
                      max_num_seqs,system_prompt_len,question_len,output_len,num_groups,\
                      prompts_per_group,multi_turn,rate,duration_s";

/// Three stages of Qwen2.5-7B: long prompts, long answers, and a light load.
const STAGES: [&str; 3] = [
    "long-prompts,0,Qwen/Qwen2.5-7B,1,8192,2048,64,2000,2000,8,4,4,False,4.0,30",
    "long-answers,0,Qwen/Qwen2.5-7B,1,8192,2048,64,100,100,200,4,4,False,8.0,30",
    "light,0,Qwen/Qwen2.5-7B,1,8192,2048,64,200,200,32,4,4,False,1.0,30",
];

fn infertune(args: &[&str], paths: &[(&str, &Path)]) -> std::process::Output {
    let mut cmd = Command::cargo_bin("infertune").unwrap();
    cmd.args(args);
    for (flag, path) in paths {
        cmd.arg(flag).arg(path);
    }
    cmd.output().unwrap()
}

fn configs(dir: &Path) -> PathBuf {
    let configs = dir.join("configs");
    std::fs::create_dir_all(&configs).unwrap();
    let shipped = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/sim/profiles/models");
    std::fs::copy(
        shipped.join("Qwen2.5-7B.json"),
        configs.join("Qwen2.5-7B.json"),
    )
    .unwrap();
    configs
}

/// The twin's predictions on `card` written as a truth file: the measurements of that card.
fn measured_on(card: &Path, configs: &Path, truth: &Path) {
    let spec = truth.with_extension("spec.csv");
    std::fs::write(&spec, format!("{HEADER}\n{}\n", STAGES.join("\n"))).unwrap();
    let out = infertune(
        &["sim", "validate", "--json"],
        &[
            ("--truth", &spec),
            ("--model-configs", configs),
            ("--card", card),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let figures = ["ttft_mean_ms", "tpot_mean_ms", "e2e_mean_s", "output_tok_s"];
    let mut text = format!("{HEADER},failures,{}\n", figures.join(","));
    for (stage, row) in STAGES.iter().zip(v["rows"].as_array().unwrap()) {
        assert_eq!(row["overloaded"], false, "{row}");
        let values: Vec<String> = figures
            .iter()
            .map(|f| row["predicted"][f].as_f64().unwrap().to_string())
            .collect();
        text.push_str(&format!("{stage},0,{}\n", values.join(",")));
    }
    std::fs::write(truth, text).unwrap();
}

/// A figure of a card profile file.
fn figure(profile: &str, name: &str) -> f64 {
    let line = profile
        .lines()
        .find(|l| l.starts_with(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in\n{profile}"));
    line.split(':').nth(1).unwrap().trim().parse().unwrap()
}

#[test]
fn recovers_a_card_slower_in_compute_and_faster_in_bandwidth_from_three_stages() {
    let dir = tempfile::tempdir().unwrap();
    let configs = configs(dir.path());
    let card = dir.path().join("new-card.yaml");
    std::fs::write(&card, scaled_h100(0.6, 1.5, 1.0)).unwrap();
    let truth = dir.path().join("truth.csv");
    measured_on(&card, &configs, &truth);
    // Any file name serves as a card: here the `.profile` a user may choose.
    let fitted = dir.path().join("a100.profile");
    let out = infertune(
        &["sim", "calibrate", "--card", "H100"],
        &[
            ("--truth", &truth),
            ("--model-configs", &configs),
            ("--out", &fitted),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pass_on = format!("--card {}", fitted.display());
    assert!(
        stdout.contains(&fitted.display().to_string()) && stdout.contains(&pass_on),
        "{stdout}"
    );
    let profile = std::fs::read_to_string(&fitted).unwrap();
    assert!(profile.starts_with("# Card profile fitted by"), "{profile}");
    assert!(profile.contains("name: H100-calibrated"), "{profile}");
    let compute = figure(&profile, "tflops") / 989.0;
    let bandwidth = figure(&profile, "hbm_gbps") / 3350.0;
    assert!(
        (compute / 0.6 - 1.0).abs() < 0.1,
        "compute ×{compute}: {stdout}"
    );
    assert!(
        (bandwidth / 1.5 - 1.0).abs() < 0.1,
        "bandwidth ×{bandwidth}: {stdout}"
    );
    // The fitted file is a card: validating against it reproduces the measurements.
    let out = infertune(
        &["sim", "validate"],
        &[
            ("--truth", &truth),
            ("--model-configs", &configs),
            ("--card", &fitted),
        ],
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{table}");
    assert!(table.contains("rows modelled: 3 of 3"), "{table}");
}

#[test]
fn card_files_and_held_out_experiments_that_do_not_exist_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let configs = configs(dir.path());
    let truth = dir.path().join("truth.csv");
    std::fs::write(&truth, format!("{HEADER}\n{}\n", STAGES[2])).unwrap();
    let run = |args: &[&str], card: &Path| {
        let out = infertune(
            args,
            &[
                ("--truth", &truth),
                ("--model-configs", &configs),
                ("--card", card),
                ("--out", &dir.path().join("out.yaml")),
            ],
        );
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let missing = dir.path().join("missing.yaml");
    let e = run(&["sim", "calibrate"], &missing);
    assert!(e.contains("cannot read card profile"), "{e}");
    let broken = dir.path().join("broken.yaml");
    std::fs::write(&broken, "name: X\ntflops: fast\n").unwrap();
    let e = run(&["sim", "calibrate"], &broken);
    assert!(e.contains("not a card profile"), "{e}");
    let e = run(
        &["sim", "calibrate", "--hold-out", "nope"],
        Path::new("H100"),
    );
    assert!(e.contains("--hold-out nope"), "{e}");
}
