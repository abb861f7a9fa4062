//! Snapshots of each adapter's launch: argv, env, files and readiness.

use crate::kit::children as support;

use infertune::engine::for_kind;
use infertune::launch::command_line;
use infertune::record::params_of as params;
use infertune::record::Value;
use infertune::space::{EngineKind, ParamKind, Target};
use support::*;

fn argv(spec: &infertune::launch::LaunchSpec) -> Vec<String> {
    std::iter::once(spec.program.clone())
        .chain(spec.args.iter().cloned())
        .collect()
}

#[test]
fn vllm_renders_flags_as_vllm_parses_them() {
    let mut renamed = int("swap");
    renamed.target = Some(Target::Flag("--swap-space".into()));
    let mut via_env = text("threads", &["0-1"]);
    via_env.target = Some(Target::Env("VLLM_CPU_OMP_THREADS_BIND".into()));
    let mut hidden = int("budget");
    hidden.target = Some(Target::None);
    let mut space = space(
        EngineKind::Vllm,
        "/models/tiny model",
        vec![
            int("max_num_seqs"),
            param("enable_prefix_caching", ParamKind::Bool),
            param("enable_chunked_prefill", ParamKind::Bool),
            param(
                "gpu_memory_utilization",
                ParamKind::Float {
                    low: 0.1,
                    high: 1.0,
                    step: None,
                    log: false,
                },
            ),
            text(
                "override_generation_config",
                &[r#"{"temperature": 0.5, "note": "it's"}"#],
            ),
            renamed,
            via_env,
            hidden,
        ],
    );
    space.engine.served_model_name = Some("tiny".into());
    space.launch.env.insert("HF_HUB_OFFLINE".into(), "1".into());
    space.launch.extra_args = vec!["--block-size".into(), "128".into()];
    let dir = tempfile::tempdir().unwrap();
    let config = params(&[
        ("max_num_seqs", Value::Int(256)),
        ("enable_prefix_caching", Value::Bool(true)),
        ("enable_chunked_prefill", Value::Bool(false)),
        ("gpu_memory_utilization", Value::Float(0.9)),
        (
            "override_generation_config",
            Value::Str(r#"{"temperature": 0.5, "note": "it's"}"#.into()),
        ),
        ("swap", Value::Int(4)),
        ("threads", Value::Str("0-1".into())),
        ("budget", Value::Int(7)),
    ]);
    let spec = for_kind(EngineKind::Vllm)
        .launch_spec(&space, &config, &slot(dir.path()))
        .unwrap();
    assert_eq!(
        argv(&spec),
        [
            "vllm",
            "serve",
            "/models/tiny model",
            "--host",
            "127.0.0.1",
            "--port",
            "8123",
            "--served-model-name",
            "tiny",
            "--max-num-seqs",
            "256",
            "--enable-prefix-caching",
            "--no-enable-chunked-prefill",
            "--gpu-memory-utilization",
            "0.9",
            "--override-generation-config",
            r#"{"temperature": 0.5, "note": "it's"}"#,
            "--swap-space",
            "4",
            "--block-size",
            "128",
        ]
    );
    assert_eq!(spec.env["VLLM_CPU_OMP_THREADS_BIND"], "0-1");
    assert_eq!(spec.env["HF_HUB_OFFLINE"], "1");
    assert_eq!(spec.readiness.health_path, "/health");
    assert_eq!(spec.readiness.served_model, "tiny");
    let line = command_line(&spec).unwrap();
    assert_eq!(
        line,
        r#"env 'HF_HUB_OFFLINE=1' 'VLLM_CPU_OMP_THREADS_BIND=0-1' vllm serve '/models/tiny model' --host 127.0.0.1 --port 8123 --served-model-name tiny --max-num-seqs 256 --enable-prefix-caching --no-enable-chunked-prefill --gpu-memory-utilization 0.9 --override-generation-config "{\"temperature\": 0.5, \"note\": \"it's\"}" --swap-space 4 --block-size 128"#
    );
    let words = shlex::split(&line).unwrap();
    assert_eq!(words[3..], argv(&spec)[..]);
}

#[test]
fn vllm_api_server_override_passes_the_model_as_a_flag() {
    let mut space = space(EngineKind::Vllm, "m", vec![]);
    space.launch.command = Some(vec![
        "python".into(),
        "-m".into(),
        "vllm.entrypoints.openai.api_server".into(),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let mut slot = slot(dir.path());
    slot.devices = vec![2, 3];
    let spec = for_kind(EngineKind::Vllm)
        .launch_spec(&space, &params(&[]), &slot)
        .unwrap();
    assert_eq!(
        argv(&spec),
        [
            "python",
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            "m",
            "--host",
            "127.0.0.1",
            "--port",
            "8123"
        ]
    );
    assert_eq!(spec.env["CUDA_VISIBLE_DEVICES"], "2,3");
}

#[test]
fn sglang_and_llamacpp_use_store_true_booleans() {
    let defs = vec![
        int("max_running_requests"),
        param("enable_torch_compile", ParamKind::Bool),
        param("disable_radix_cache", ParamKind::Bool),
    ];
    let config = params(&[
        ("max_running_requests", Value::Int(32)),
        ("enable_torch_compile", Value::Bool(true)),
        ("disable_radix_cache", Value::Bool(false)),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let mut sglang = space(EngineKind::Sglang, "Qwen/Qwen2-0.5B", defs.clone());
    sglang.engine.served_model_name = Some("q w".into());
    let spec = for_kind(EngineKind::Sglang)
        .launch_spec(&sglang, &config, &slot(dir.path()))
        .unwrap();
    assert_eq!(
        argv(&spec),
        [
            "python3",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "Qwen/Qwen2-0.5B",
            "--host",
            "127.0.0.1",
            "--port",
            "8123",
            "--served-model-name",
            "q w",
            "--max-running-requests",
            "32",
            "--enable-torch-compile",
        ]
    );
    let llama = space(
        EngineKind::Llamacpp,
        "/m/q4.gguf",
        vec![int("ctx_size"), param("no_kv_offload", ParamKind::Bool)],
    );
    let config = params(&[
        ("ctx_size", Value::Int(4096)),
        ("no_kv_offload", Value::Bool(true)),
    ]);
    let spec = for_kind(EngineKind::Llamacpp)
        .launch_spec(&llama, &config, &slot(dir.path()))
        .unwrap();
    assert_eq!(
        argv(&spec),
        [
            "llama-server",
            "-m",
            "/m/q4.gguf",
            "--host",
            "127.0.0.1",
            "--port",
            "8123",
            "--alias",
            "/m/q4.gguf",
            "--ctx-size",
            "4096",
            "--no-kv-offload",
            "--metrics",
        ]
    );
}

#[test]
fn llamacpp_always_names_the_model_and_serves_metrics_once() {
    let mut llama = space(EngineKind::Llamacpp, "/m/tiny.gguf", vec![int("threads")]);
    llama.engine.served_model_name = Some("tiny".into());
    llama.launch.extra_args = vec!["--metrics".into(), "--no-webui".into()];
    let dir = tempfile::tempdir().unwrap();
    let engine = for_kind(EngineKind::Llamacpp);
    let spec = engine
        .launch_spec(
            &llama,
            &params(&[("threads", Value::Int(2))]),
            &slot(dir.path()),
        )
        .unwrap();
    assert_eq!(
        argv(&spec)[7..],
        [
            "--alias",
            "tiny",
            "--threads",
            "2",
            "--metrics",
            "--no-webui"
        ]
    );
    assert_eq!(spec.readiness.served_model, "tiny");
    assert_eq!(spec.readiness.health_path, "/health");
    assert_eq!(
        engine.output_token_counter(),
        Some("llamacpp:tokens_predicted_total")
    );
}

#[test]
fn config_path_targets_are_refused_by_flag_engines() {
    let mut p = int("max_batch");
    p.target = Some(Target::ConfigPath("A.b".into()));
    let space = space(EngineKind::Vllm, "m", vec![p]);
    let dir = tempfile::tempdir().unwrap();
    let err = for_kind(EngineKind::Vllm)
        .launch_spec(
            &space,
            &params(&[("max_batch", Value::Int(1))]),
            &slot(dir.path()),
        )
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("config path `A.b`") && err.contains("takes no config file"),
        "{err}"
    );
}

#[test]
fn undeclared_parameters_are_refused() {
    let space = space(EngineKind::Vllm, "m", vec![]);
    let dir = tempfile::tempdir().unwrap();
    let err = for_kind(EngineKind::Vllm)
        .launch_spec(
            &space,
            &params(&[("max_num_seqs", Value::Int(1))]),
            &slot(dir.path()),
        )
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`max_num_seqs`") && err.contains("does not declare"),
        "{err}"
    );
}

#[test]
fn sim_passes_numa_as_a_flag_and_params_vllm_style() {
    let numa = param(
        "numa",
        ParamKind::Numa {
            candidates: infertune::space::NumaCandidates::List(vec![
                "none".into(),
                "-N 0 -m 0".into(),
            ]),
        },
    );
    let mut space = space(
        EngineKind::Sim,
        "llama-8b",
        vec![
            int("max_num_seqs"),
            param("enable_prefix_caching", ParamKind::Bool),
            numa,
        ],
    );
    space.launch.command = Some(vec!["/bin/infertune".into()]);
    space.engine.card = Some("h100".into());
    let dir = tempfile::tempdir().unwrap();
    let config = params(&[
        ("max_num_seqs", Value::Int(64)),
        ("enable_prefix_caching", Value::Bool(false)),
        ("numa", Value::Str("-N 0 -m 0".into())),
    ]);
    let spec = for_kind(EngineKind::Sim)
        .launch_spec(&space, &config, &slot(dir.path()))
        .unwrap();
    assert_eq!(
        argv(&spec),
        [
            "/bin/infertune",
            "sim",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            "8123",
            "--model",
            "llama-8b",
            "--card",
            "h100",
            "--served-model-name",
            "llama-8b",
            "--max-num-seqs",
            "64",
            "--no-enable-prefix-caching",
            "--numa",
            "-N 0 -m 0",
        ]
    );
    assert!(command_line(&spec).unwrap().ends_with("--numa '-N 0 -m 0'"));
    let none = params(&[("numa", Value::Str("none".into()))]);
    let spec = for_kind(EngineKind::Sim)
        .launch_spec(&space, &none, &slot(dir.path()))
        .unwrap();
    assert!(!spec.args.contains(&"--numa".to_string()));
}

#[test]
fn custom_expands_placeholders_and_drops_inactive_ones() {
    let mut env_param = int("threads");
    env_param.target = Some(Target::Env("OMP_NUM_THREADS".into()));
    let mut space = space(
        EngineKind::Custom,
        "/m/x",
        vec![
            int("batch"),
            text("label", &["a \"b\" c"]),
            int("chunk"),
            env_param,
        ],
    );
    space.launch.command = Some(
        [
            "my-server",
            "--listen={host}:{port}",
            "--model",
            "{model}",
            "--batch={batch}",
            "--label",
            "{label}",
            "--chunk={chunk}",
            "{{literal}}",
        ]
        .map(String::from)
        .to_vec(),
    );
    let dir = tempfile::tempdir().unwrap();
    let config = params(&[
        ("batch", Value::Int(8)),
        ("label", Value::Str("a \"b\" c".into())),
        ("threads", Value::Int(2)),
    ]);
    let spec = for_kind(EngineKind::Custom)
        .launch_spec(&space, &config, &slot(dir.path()))
        .unwrap();
    assert_eq!(
        argv(&spec),
        [
            "my-server",
            "--listen=127.0.0.1:8123",
            "--model",
            "/m/x",
            "--batch=8",
            "--label",
            "a \"b\" c",
            "{literal}"
        ]
    );
    assert_eq!(spec.env["OMP_NUM_THREADS"], "2");
    assert_eq!(
        command_line(&spec).unwrap(),
        r#"env 'OMP_NUM_THREADS=2' my-server '--listen=127.0.0.1:8123' --model /m/x '--batch=8' --label 'a "b" c' '{literal}'"#
    );
}

#[test]
fn custom_without_a_command_says_what_to_write() {
    let space = space(EngineKind::Custom, "m", vec![]);
    let dir = tempfile::tempdir().unwrap();
    let err = for_kind(EngineKind::Custom)
        .launch_spec(&space, &params(&[]), &slot(dir.path()))
        .unwrap_err();
    assert!(err.to_string().contains("needs `launch.command`"), "{err}");
}
