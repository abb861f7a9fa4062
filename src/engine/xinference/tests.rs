//! The launch of a trial: the script, its files, environment and readiness.

use super::*;
use crate::launch::classify::{classify, Ending};
use crate::record::FailureKind;

/// A space over a GGUF in `dir` (with an f16 beside it), on a CPU host.
fn space(dir: &Path, extra: &str) -> StudySpec {
    for q in ["q8_0", "f16"] {
        std::fs::write(dir.join(format!("tiny-{q}.gguf")), b"").unwrap();
    }
    // The venv's tools beside the server, as the provisioning installs them.
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    for tool in ["xinference-local", "xinference", "python"] {
        std::fs::write(dir.join("bin").join(tool), b"").unwrap();
    }
    let text = format!(
        "name: x\n\
         engine: {{kind: xinference, version: \"4.1.0\", model: {}/tiny-q8_0.gguf, served_model_name: tiny}}\n\
         launch: {{command: [\"{}/bin/xinference-local\"], port: 9000, extra_args: [--log-level, debug]}}\n\
         rules: {{platform: cpu}}\n\
         parameters:\n  n_ctx: {{type: choice, values: [1024, 2048], default: 2048}}\n  \
         replica: {{type: choice, values: [1, 2], default: 1}}\n  \
         cont_batching: {{type: bool, default: true}}\n{extra}\
         probe: {{api: completions, dataset: {{kind: random, input_len: 8, output_len: 8}}, load: {{kind: closed, concurrency: 1, duration: 1s}}}}\n\
         objective: {{metric: output_throughput}}\n",
        dir.display(),
        dir.display()
    );
    let path = dir.join("space.yaml");
    std::fs::write(&path, text).unwrap();
    StudySpec::load(&path, crate::engine::rule_pack).unwrap()
}

fn slot(dir: &Path, devices: Vec<u32>) -> Slot {
    Slot {
        port: 9000,
        devices,
        workdir: dir.join("trial-1"),
        extra_ports: vec![9001],
    }
}

fn config(pairs: &[(&str, Value)]) -> Params {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn file<'a>(spec: &'a LaunchSpec, name: &str) -> &'a str {
    &spec
        .files
        .iter()
        .find(|f| f.path.ends_with(name))
        .unwrap_or_else(|| panic!("no {name}"))
        .contents
}

#[test]
fn a_trial_runs_the_script_with_its_home_and_waits_for_its_ready_file() {
    let dir = tempfile::tempdir().unwrap();
    let space = space(dir.path(), "");
    let params = config(&[
        ("n_ctx", Value::Int(1024)),
        ("replica", Value::Int(2)),
        ("cont_batching", Value::Bool(false)),
    ]);
    let spec = Xinference
        .launch_spec(&space, &params, &slot(dir.path(), vec![]))
        .unwrap();
    let home = dir.path().join("trial-1/xinference");
    assert_eq!(spec.program, "bash");
    assert_eq!(spec.args, [path_text(&home.join("launch.sh"))]);
    assert_eq!(spec.env["XINFERENCE_HOME"], path_text(&home.join("home")));
    assert_eq!(spec.env["XINFERENCE_AUTH_ADVANCED"], "0");
    assert_eq!(spec.env["XINFERENCE_ENABLE_VIRTUAL_ENV"], "0");
    assert_eq!(spec.readiness.ready_file, Some(home.join("ready")));
    assert_eq!(spec.readiness.health_path, "/status");
    assert_eq!(spec.readiness.served_model, "tiny");

    let script = file(&spec, "launch.sh");
    let launch = script
        .lines()
        .find(|l| l.contains("xinference launch"))
        .unwrap();
    let words = shlex::split(launch).unwrap();
    let after = |option: &str| {
        let at = words
            .iter()
            .position(|w| w == option)
            .unwrap_or_else(|| panic!("no {option}: {launch}"));
        words[at + 1].as_str()
    };
    assert_eq!(words[0], format!("{}/bin/xinference", dir.path().display()));
    assert!(
        script.contains(&format!("{}/bin/python ", dir.path().display())),
        "{script}"
    );
    assert_eq!(after("--model-engine"), "llama.cpp");
    assert_eq!(after("--model-format"), "ggufv2");
    assert_eq!(after("--quantization"), "q8_0");
    assert_eq!(after("--model-uid"), "tiny");
    assert_eq!(after("--replica"), "2");
    assert_eq!(after("--n-gpu"), "none");
    assert_eq!(after("--n_ctx"), "1024");
    assert_eq!(after("--cont_batching"), "false");
    assert!(
        script.contains("--metrics-exporter-port 9001 --log-level debug &"),
        "{script}"
    );
    let ready = script
        .lines()
        .find(|l| l.contains("gate.py ready"))
        .unwrap();
    let tail = format!(
        "tiny 2 {} n_ctx cont_batching",
        path_text(&home.join("ready"))
    );
    assert!(ready.ends_with(&tail), "{ready}");
    // extra_args went to the server, not to bash.
    assert!(!spec.args.iter().any(|a| a == "--log-level"));

    let family: serde_json::Value = serde_json::from_str(file(&spec, "model.json")).unwrap();
    assert_eq!(family["model_name"], "infertune-tiny");
    assert_eq!(family["model_specs"].as_array().unwrap().len(), 2);
    assert_eq!(file(&spec, "gate.py"), include_str!("gate.py"));
}

#[test]
fn the_slot_devices_and_a_tuned_quantization_reach_the_launch() {
    let dir = tempfile::tempdir().unwrap();
    let space = space(
        dir.path(),
        "  quantization: {type: choice, values: [q8_0, f16]}\n",
    );
    let params = config(&[("quantization", Value::Str("f16".into()))]);
    let spec = Xinference
        .launch_spec(&space, &params, &slot(dir.path(), vec![2, 3]))
        .unwrap();
    let script = file(&spec, "launch.sh");
    assert!(script.contains("--quantization f16"), "{script}");
    assert!(!script.contains("--quantization q8_0"), "{script}");
    assert!(script.contains("--gpu-idx '2,3'"), "{script}");
    assert!(!script.contains("--n-gpu"), "{script}");
    // A launch setting is no engine setting for the gate to check.
    let ready = script
        .lines()
        .find(|l| l.contains("gate.py ready"))
        .unwrap();
    assert!(!ready.contains("quantization"), "{ready}");
}

#[test]
fn a_flag_target_is_refused_with_the_way_out() {
    let dir = tempfile::tempdir().unwrap();
    let space = space(
        dir.path(),
        "  n_batch: {type: choice, values: [64], flag: --batch-size}\n",
    );
    let err = Xinference
        .launch_spec(
            &space,
            &config(&[("n_batch", Value::Int(64))]),
            &slot(dir.path(), vec![]),
        )
        .unwrap_err();
    assert!(err.to_string().contains("its name is the setting"), "{err}");
}

#[test]
fn slots_past_the_request_cap_leave_a_warning() {
    let many = config(&[("n_parallel", Value::Int(16))]);
    assert!(warnings(&many)[0].contains("the slots past 10 stay idle"));
    let threads = config(&[
        ("n_parallel", Value::Int(12)),
        ("n_threads", Value::Int(12)),
    ]);
    assert!(warnings(&threads).is_empty());
    assert!(warnings(&config(&[("n_parallel", Value::Int(8))])).is_empty());
}

/// Log lines as XInference 4.1.0 and the launch script print them.
#[test]
fn the_log_classes_name_the_failure() {
    let patterns = [&LOG];
    let noise = "2026-11-27 10:00:00,000 xinference.model.llm.llama_cpp.core 123 ERROR    \
                 Failed to set the param use_mmap = False, error: 'xllamacpp.xllamacpp.CommonParams' \
                 object has no attribute 'use_mmap'\n";
    let dropped = format!(
        "{noise}error: XInference did not apply a setting: Failed to set the param n_paralel = 3, \
         error: 'xllamacpp.xllamacpp.CommonParams' object has no attribute 'n_paralel'\n"
    );
    let found = classify(Ending::Code(1), &dropped, &patterns);
    assert_eq!(found.kind, FailureKind::InvalidConfig);
    assert!(
        found
            .message
            .starts_with("XInference did not apply a setting: Failed to set the param n_paralel"),
        "{}",
        found.message
    );

    let not_found = format!(
        "{noise}Error: Failed to launch model tiny: Model not found, name: infertune-tiny, \
         format: ggufv2, size: 0_01, quantization: q4_0\n"
    );
    let found = classify(Ending::Code(1), &not_found, &patterns);
    assert_eq!(found.kind, FailureKind::InvalidConfig);
    assert!(
        found
            .message
            .starts_with("Failed to launch model tiny: Model not found"),
        "{}",
        found.message
    );

    let killed = format!(
        "{noise}error: XInference replica 1 of tiny died, its socket closed (killed, most often \
         by the kernel for want of memory): Remote server unixsocket:///1234 closed: 0 bytes read \
         on a total of 11 expected bytes\n"
    );
    let found = classify(Ending::Code(1), &killed, &patterns);
    assert_eq!(found.kind, FailureKind::Oom, "{}", found.message);
    assert!(
        found.message.contains("replica 1 of tiny died"),
        "{}",
        found.message
    );

    let noise_only = classify(Ending::Code(1), noise, &patterns);
    assert_ne!(
        noise_only.kind,
        FailureKind::InvalidConfig,
        "{}",
        noise_only.message
    );
}
