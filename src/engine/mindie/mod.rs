//! Huawei MindIE: writes `config.json` from a template and starts `mindieservice_daemon`.

pub(crate) mod expert;
mod json_path;
mod rules;

pub(crate) use rules::BATCH;

use crate::engine::assemble::{finish, program_and_leading, Invocation};
use crate::engine::render::{render_params, BoolStyle, DefaultTarget, Rendered};
use crate::engine::Description;
use crate::engine::{Engine, Slot};
use crate::launch::classify::LogPatterns;
use crate::launch::{FileToWrite, LaunchSpec};
use crate::record::{Params, Value};
use crate::space::StudySpec;
use anyhow::{bail, Context, Result};
use serde_json::{json, Value as Json};

/// The largest config template read (MindIE's config.json is a few KiB).
const MAX_TEMPLATE_BYTES: u64 = 16 * 1024 * 1024;

/// The MindIE adapter. Parameters are dotted paths into the config template (a parameter's
/// name is its path unless it has a `config_path` target); the written config listens on the
/// slot's host and port (service, management and metrics on the same port, so the health
/// endpoint `/v2/health/ready` is reachable there), names the model after the served name, and
/// uses the slot's NPUs; its
/// inter-process port (`interCommPort`) is the slot's extra port. The daemon finds it through `MIES_CONFIG_JSON_PATH`.
pub struct Mindie;

/// Where the model entry sits in MindIE's config.
const MODEL_CONFIG: &str = "BackendConfig.ModelDeployConfig.ModelConfig[0]";

impl Engine for Mindie {
    fn launch_spec(&self, space: &StudySpec, params: &Params, slot: &Slot) -> Result<LaunchSpec> {
        let rendered = render_params(
            space,
            params,
            BoolStyle::Negatable,
            DefaultTarget::ConfigPath,
        )?;
        if let Some(flag) = rendered.flags.first() {
            bail!(
                "{}: MindIE takes its settings from config.json, not flags (`{flag}`); give the \
                 parameter a `config_path` target such as BackendConfig.ScheduleConfig.maxBatchSize",
                space.origin
            );
        }
        let config = render_config(space, slot, &rendered)?;
        let https = json_path::get(&config, "ServerConfig.httpsEnabled")
            .and_then(Json::as_bool)
            .unwrap_or(true);
        let path = slot.workdir.join("config.json");
        let (program, args) = program_and_leading(space, &["mindieservice_daemon"]);
        let mut invocation = Invocation::new(program, args, "/v2/health/ready");
        invocation.https = https;
        invocation.env.insert(
            "MIES_CONFIG_JSON_PATH".into(),
            path.to_string_lossy().into_owned(),
        );
        invocation.files.push(FileToWrite {
            path,
            contents: serde_json::to_string_pretty(&config)? + "\n",
        });
        finish(space, slot, invocation, &rendered)
    }

    /// `ServerConfig.interCommPort`, which every daemon on a host opens.
    fn extra_ports(&self) -> usize {
        1
    }
}

/// The template with the slot, model and parameters applied.
fn render_config(space: &StudySpec, slot: &Slot, rendered: &Rendered) -> Result<Json> {
    let Some(template) = &space.launch.config_template else {
        bail!(
            "{}: engine `mindie` needs `launch.config_template`, the path of a MindIE config.json \
             to start from (e.g. a copy of $MIES_INSTALL_PATH/conf/config.json)",
            space.origin
        );
    };
    let text =
        crate::util::files::read_limited(template, MAX_TEMPLATE_BYTES).with_context(|| {
            format!(
                "cannot read the MindIE config template {}",
                template.display()
            )
        })?;
    let mut config: Json = serde_json::from_str(&text).with_context(|| {
        format!(
            "the MindIE config template {} is not valid JSON",
            template.display()
        )
    })?;
    let host = &space.launch.host;
    let fixed = [
        ("ServerConfig.ipAddress".to_string(), json!(host)),
        ("ServerConfig.port".to_string(), json!(slot.port)),
        ("ServerConfig.managementPort".to_string(), json!(slot.port)),
        ("ServerConfig.metricsPort".to_string(), json!(slot.port)),
        (
            format!("{MODEL_CONFIG}.modelName"),
            json!(space.engine.served_name().to_string()),
        ),
        (
            format!("{MODEL_CONFIG}.modelWeightPath"),
            json!(space.engine.model),
        ),
    ];
    let inter = slot
        .extra_ports
        .first()
        .map(|p| ("ServerConfig.interCommPort".to_string(), json!(p)));
    for (path, value) in fixed.into_iter().chain(inter) {
        json_path::set(&mut config, &path, value, true).with_context(|| {
            format!(
                "cannot place the server and model into the MindIE config template {}",
                template.display()
            )
        })?;
    }
    if host == "0.0.0.0" {
        json_path::set(
            &mut config,
            "ServerConfig.allowAllZeroIpListening",
            json!(true),
            true,
        )?;
    }
    if !slot.devices.is_empty() {
        json_path::set(
            &mut config,
            "BackendConfig.npuDeviceIds",
            json!([slot.devices]),
            true,
        )?;
        let world = json!(slot.devices.len());
        json_path::set(
            &mut config,
            &format!("{MODEL_CONFIG}.worldSize"),
            world,
            true,
        )?;
    }
    for (path, value) in &rendered.config {
        json_path::set(&mut config, path, to_json(value), false)
            .with_context(|| format!("in the MindIE config template {}", template.display()))?;
    }
    Ok(config)
}

fn to_json(value: &Value) -> Json {
    match value {
        Value::Bool(b) => json!(b),
        Value::Int(i) => json!(i),
        Value::Float(f) => json!(f),
        Value::Str(s) => json!(s),
    }
}

/// What marks a failure in the log: MindIE's.
static LOG: LogPatterns = LogPatterns {
    oom: &["NPU out of memory"],
    arg_refusals: &[],
    config_checks: &[],
};

/// What infertune knows of this engine.
pub(crate) static ENGINE: Description = Description {
    launch: &Mindie,
    rules: &rules::PACK,
    log: &LOG,
    catalogues: &[("mindie-2.0.RC1.json", include_str!("mindie-2.0.RC1.json"))],
    expert: &[expert::SETTINGS],
};
