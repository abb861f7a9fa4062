//! The export never runs a custom engine's command to ask its version: that command may start
//! a server instead of answering.

use crate::kit::e2e_sim_common::tune;
use assert_cmd::Command;

#[test]
fn a_custom_engine_is_never_run_for_its_version() {
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().join("asked-for-version");
    let fake = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/children/fake_openai.py");
    let script = tmp.path().join("engine");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = --version ] && {{ touch {marker:?}; sleep 30; }}; done\n\
             exec python3 {fake:?} \"$@\"\n"
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let space = tmp.path().join("custom.yaml");
    std::fs::write(
        &space,
        format!(
            "name: custom\nengine: {{kind: custom, model: tiny}}\n\
             launch:\n  command: [{script:?}, --port, \"{{port}}\"]\n  port: 18770\n  \
             ready_timeout: 20s\n  stop_grace: 1s\n\
             parameters:\n  workers: {{type: choice, values: [1], default: 1, internal: true}}\n\
             probe:\n  dataset: {{kind: random, input_len: 8, output_len: 4}}\n  \
             load: {{kind: closed, concurrency: 1, requests: 2}}\n\
             objective: {{metric: output_throughput}}\n\
             search: {{sampler: random, trials: 1, revalidate_top: 0}}\n"
        ),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let out = Command::from_std(tune(&space, &tmp.path().join("results"), &[]))
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        tmp.path().join("results/custom/best.json").exists(),
        "the baseline should win and be exported: {stderr}"
    );
    assert!(
        !marker.exists(),
        "the engine's command was run with --version"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(25));
}
