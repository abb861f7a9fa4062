//! `infertune sim eval` and `sim serve --help` on the command line.

use assert_cmd::Command;
use std::io::Write;

fn eval() -> Command {
    let mut cmd = Command::cargo_bin("infertune").unwrap();
    cmd.args([
        "sim",
        "eval",
        "--card",
        "H100",
        "--model",
        "Qwen2.5-7B",
        "--requests",
        "20",
        "--concurrency",
        "4",
        "--output-len",
        "16",
    ]);
    cmd
}

#[test]
fn prints_the_probe_metrics_as_json() {
    let out = eval()
        .args(["--set", "max_num_seqs=8", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["metrics"]["completed"], 20.0);
    assert_eq!(v["metrics"]["total_output_tokens"], 320.0);
    assert!(v["metrics"]["p99_ttft_ms"].as_f64().unwrap() > 0.0);
}

#[test]
fn start_failures_exit_1_with_the_engines_message() {
    let out = eval()
        .args(["--set", "gpu_memory_utilization=1.5"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    // The vLLM rule pack's own (pydantic) message for this version.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("gpu_memory_utilization"), "{stderr}");
    assert!(stderr.contains("less than or equal to 1"), "{stderr}");
}

#[test]
fn evaluates_a_file_of_configs_and_reports_bad_lines() {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    writeln!(
        file,
        "{{\"max_num_seqs\": 4}}\n{{\"max_num_seqs\": 64, \"tensor_parallel_size\": 3}}"
    )
    .unwrap();
    let out = eval().arg("--configs").arg(file.path()).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[0]["metrics"].is_object());
    assert_eq!(lines[1]["failure"]["kind"], "invalid-config");
    writeln!(file, "not json").unwrap();
    let out = eval().arg("--configs").arg(file.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(":3: expected a JSON object of parameters")
    );
}

#[test]
fn sim_serve_help_describes_every_flag() {
    let out = Command::cargo_bin("infertune")
        .unwrap()
        .args(["sim", "serve", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = help.lines().collect();
    let flags: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.trim_start().starts_with("--"))
        .collect();
    assert!(flags.len() > 20, "{help}");
    for pair in lines.windows(2) {
        if pair[0].trim_start().starts_with("--") {
            assert!(
                !pair[1].trim().is_empty(),
                "`{}` has no description",
                pair[0].trim()
            );
        }
    }
}
