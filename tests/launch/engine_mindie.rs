//! MindIE: the written config.json (a snapshot) and the launch around it.

use crate::kit::children as support;

use infertune::engine::for_kind;
use infertune::record::params_of as params;
use infertune::record::Value;
use infertune::space::{EngineKind, ParamKind, Target};
use serde_json::json;
use support::*;

fn template() -> serde_json::Value {
    json!({
        "Version": "1.0.0",
        "ServerConfig": {"ipAddress": "127.0.0.1", "port": 1025, "managementPort": 1026,
                         "metricsPort": 1027, "httpsEnabled": false},
        "BackendConfig": {
            "npuDeviceIds": [[0]],
            "ModelDeployConfig": {
                "maxSeqLen": 2560,
                "ModelConfig": [{"modelName": "llama", "modelWeightPath": "/data/llama", "worldSize": 1}]
            },
            "ScheduleConfig": {"maxBatchSize": 200, "maxPrefillTokens": 8192, "supportSelectBatch": false}
        }
    })
}

fn mindie_space(
    dir: &std::path::Path,
    template: &serde_json::Value,
) -> infertune::space::StudySpec {
    let path = dir.join("template.json");
    std::fs::write(&path, serde_json::to_string_pretty(template).unwrap()).unwrap();
    let mut batch = int("max_batch");
    batch.target = Some(Target::ConfigPath(
        "BackendConfig.ScheduleConfig.maxBatchSize".into(),
    ));
    let mut space = space(
        EngineKind::Mindie,
        "/weights/Qwen 7B",
        vec![
            batch,
            param(
                "BackendConfig.ScheduleConfig.supportSelectBatch",
                ParamKind::Bool,
            ),
            text(
                "BackendConfig.ModelDeployConfig.ModelConfig[0].modelName",
                &["it's \"quoted\""],
            ),
        ],
    );
    space.launch.config_template = Some(path);
    space
}

#[test]
fn writes_config_json_with_slot_model_and_params() {
    let dir = tempfile::tempdir().unwrap();
    let space = mindie_space(dir.path(), &template());
    let mut slot = slot(&dir.path().join("trial-1"));
    slot.devices = vec![4, 5];
    let config = params(&[
        ("max_batch", Value::Int(64)),
        (
            "BackendConfig.ScheduleConfig.supportSelectBatch",
            Value::Bool(true),
        ),
    ]);
    let spec = for_kind(EngineKind::Mindie)
        .launch_spec(&space, &config, &slot)
        .unwrap();
    assert_eq!(spec.program, "mindieservice_daemon");
    assert!(spec.args.is_empty());
    assert_eq!(spec.readiness.health_path, "/v2/health/ready");
    assert!(!spec.readiness.https);
    let file = &spec.files[0];
    assert_eq!(file.path, slot.workdir.join("config.json"));
    assert_eq!(
        spec.env["MIES_CONFIG_JSON_PATH"],
        file.path.to_string_lossy()
    );
    let written: serde_json::Value = serde_json::from_str(&file.contents).unwrap();
    assert_eq!(
        written,
        json!({
            "Version": "1.0.0",
            "ServerConfig": {"ipAddress": "127.0.0.1", "port": 8123, "managementPort": 8123,
                             "metricsPort": 8123, "httpsEnabled": false},
            "BackendConfig": {
                "npuDeviceIds": [[4, 5]],
                "ModelDeployConfig": {
                    "maxSeqLen": 2560,
                    "ModelConfig": [{"modelName": "/weights/Qwen 7B", "modelWeightPath": "/weights/Qwen 7B", "worldSize": 2}]
                },
                "ScheduleConfig": {"maxBatchSize": 64, "maxPrefillTokens": 8192, "supportSelectBatch": true}
            }
        })
    );
}

#[test]
fn a_parameter_may_set_a_quoted_string_and_https_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let mut tpl = template();
    tpl["ServerConfig"]["httpsEnabled"] = json!(true);
    let space = mindie_space(dir.path(), &tpl);
    let config = params(&[(
        "BackendConfig.ModelDeployConfig.ModelConfig[0].modelName",
        Value::Str("it's \"quoted\"".into()),
    )]);
    let spec = for_kind(EngineKind::Mindie)
        .launch_spec(&space, &config, &slot(dir.path()))
        .unwrap();
    assert!(spec.readiness.https);
    let written: serde_json::Value = serde_json::from_str(&spec.files[0].contents).unwrap();
    assert_eq!(
        written["BackendConfig"]["ModelDeployConfig"]["ModelConfig"][0]["modelName"],
        "it's \"quoted\""
    );
    assert!(spec.files[0]
        .contents
        .contains(r#""modelName": "it's \"quoted\"""#));
}

#[test]
fn a_misspelt_config_path_is_refused_with_a_suggestion() {
    let dir = tempfile::tempdir().unwrap();
    let mut space = mindie_space(dir.path(), &template());
    space
        .parameters
        .push(int("BackendConfig.ScheduleConfig.maxBatchSise"));
    let config = params(&[("BackendConfig.ScheduleConfig.maxBatchSise", Value::Int(8))]);
    let err = for_kind(EngineKind::Mindie)
        .launch_spec(&space, &config, &slot(dir.path()))
        .unwrap_err();
    let text = format!("{err:#}");
    assert!(text.contains("did you mean `maxBatchSize`"), "{text}");
}

#[test]
fn missing_template_says_what_to_set() {
    let dir = tempfile::tempdir().unwrap();
    let mut space = mindie_space(dir.path(), &template());
    space.launch.config_template = None;
    let err = for_kind(EngineKind::Mindie)
        .launch_spec(&space, &params(&[]), &slot(dir.path()))
        .unwrap_err();
    assert!(err.to_string().contains("launch.config_template"), "{err}");
}
