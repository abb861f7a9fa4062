//! XInference (Xorbits Inference): a server, then a model registered from a local path, then
//! that model launched on one of XInference's engines (llama.cpp, Transformers, vLLM, …).
//!
//! A trial's launch is one bash script (see [`script`]) of the three plain commands, with the
//! gate (`gate.py`) between them: the server must answer `/status` before the registration,
//! and after the launch every replica must be READY and every setting applied before the gate
//! writes the launch's ready file, which readiness waits for before its usual three checks.
//! With `replica > 1`, XInference answers as soon as replica 0 is up while requests round-robin
//! onto replicas still loading (503), so its own answers cannot tell readiness. A replica in
//! ERROR, a refused registration or launch, and a dropped setting each end the script with an
//! `error: ` line the log patterns below classify. All of it runs in the trial's process group,
//! which the supervisor tears down as a whole (signalling the server alone leaves its replicas
//! running).

mod expert;
mod model;
mod rules;
mod script;

use crate::engine::assemble::{finish, program_and_leading, Invocation};
use crate::engine::render::{render_params, value_text, BoolStyle, DefaultTarget};
use crate::engine::{Description, Engine, Slot};
use crate::launch::classify::LogPatterns;
use crate::launch::{FileToWrite, LaunchSpec};
use crate::probe::Api;
use crate::record::{Params, Value};
use crate::space::StudySpec;
use anyhow::{bail, Result};
use model::LocalModel;
use std::path::{Path, PathBuf};

/// Settings of the launch itself (not passed on to the engine), with their
/// `xinference launch` options.
const LAUNCH_OPTIONS: [(&str, &str); 5] = [
    ("model_engine", "--model-engine"),
    ("replica", "--replica"),
    ("quantization", "--quantization"),
    ("model_format", "--model-format"),
    ("n_gpu", "--n-gpu"),
];

/// Requests one llama.cpp replica serves at once at most: each holds a thread of a pool of
/// `max(10, n_threads)` (XInference's `model/llm/llama_cpp/core.py`), whatever `n_parallel`.
pub(crate) const REQUESTS_PER_REPLICA: i64 = 10;

/// The environment of every XInference process of a trial: its state in the trial folder, no
/// login (on by default in 4.x), no per-model virtual environment installed at launch, no
/// hub traffic.
const ENV: [(&str, &str); 5] = [
    ("XINFERENCE_AUTH_ADVANCED", "0"),
    ("XINFERENCE_ENABLE_VIRTUAL_ENV", "0"),
    ("HF_HUB_OFFLINE", "1"),
    ("TRANSFORMERS_OFFLINE", "1"),
    ("PYTHONUNBUFFERED", "1"),
];

/// The XInference adapter. Parameters are launch settings by name (`replica`, `n_ctx`,
/// `sampling.top_k`); `env` targets set variables; flag and config-path targets are refused.
/// The served name is the model uid. The slot's devices go to `--gpu-idx`; with none on a
/// `cpu` platform the launch passes `--n-gpu none`. `launch.command` replaces
/// `xinference-local`; the client `xinference` and the gate's `python` are taken from the same
/// folder when that is a path. The metrics exporter listens on the slot's extra port.
pub struct Xinference;

impl Engine for Xinference {
    fn launch_spec(&self, space: &StudySpec, params: &Params, slot: &Slot) -> Result<LaunchSpec> {
        let rendered = render_params(space, params, BoolStyle::Negatable, DefaultTarget::Unrouted)?;
        if let Some(target) = rendered
            .flags
            .first()
            .or(rendered.config.first().map(|c| &c.0))
        {
            bail!(
                "{}: XInference takes settings by name, not `{target}`; drop the parameter's \
                 `flag`/`config_path` target (its name is the setting)",
                space.origin
            );
        }
        let settings: Vec<(&str, &Value)> = rendered
            .unrouted
            .iter()
            .filter_map(|name| Some((name.as_str(), params.get(name)?)))
            .collect();
        let local = LocalModel::at(&space.engine.model)?;
        let dir = slot.workdir.join("xinference");
        let uid = space.engine.served_name().to_string();
        let name = format!("infertune-{}", sanitized(&uid));
        let family = local.family(&name, space.probe.api == Api::Chat)?;

        let setting = |key: &str| settings.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
        let mut launch = vec![
            "--model-name".to_string(),
            name,
            "--model-type".into(),
            "LLM".into(),
        ];
        let defaults = [
            ("model_engine", "--model-engine", local.engine.to_string()),
            ("model_format", "--model-format", local.format.to_string()),
            (
                "quantization",
                "--quantization",
                local.quantizations[0].clone(),
            ),
        ];
        for (key, option, default) in defaults {
            if setting(key).is_none() {
                launch.extend([option.to_string(), default]);
            }
        }
        launch.extend(["--size-in-billions".into(), model::SIZE.into()]);
        launch.extend(["--model-uid".into(), uid.clone()]);
        if !slot.devices.is_empty() {
            let list: Vec<String> = slot.devices.iter().map(u32::to_string).collect();
            launch.extend(["--gpu-idx".into(), list.join(",")]);
        } else if setting("n_gpu").is_none() && space.rules.platform.as_deref() == Some("cpu") {
            launch.extend(["--n-gpu".into(), "none".into()]);
        }
        let mut passed = Vec::new();
        for (key, value) in &settings {
            if let Some((_, option)) = LAUNCH_OPTIONS.iter().find(|(k, _)| k == key) {
                launch.extend([option.to_string(), value_text(value)]);
            } else {
                launch.extend([format!("--{key}"), value_text(value)]);
                passed.push(key.to_string());
            }
        }

        let (program, leading) = program_and_leading(space, &["xinference-local"]);
        let mut server = vec![program.clone()];
        server.extend(leading);
        let sibling = |tool: &str, fallback: &str| match Path::new(&program).parent() {
            Some(bin) if !bin.as_os_str().is_empty() && bin.join(tool).exists() => {
                bin.join(tool).to_string_lossy().into_owned()
            }
            _ => fallback.to_string(),
        };
        let (client, python) = (
            sibling("xinference", "xinference"),
            sibling("python", "python3"),
        );
        let paths = Paths::in_dir(&dir);
        let replicas = setting("replica").and_then(Value::as_i64).unwrap_or(1);
        let text = script::render(&script::Steps {
            server: &server,
            client: &client,
            python: &python,
            host: &space.launch.host,
            port: slot.port,
            metrics_port: slot.extra_ports.first().copied(),
            server_args: &space.launch.extra_args,
            family: &paths.family,
            launch: &launch,
            uid: &uid,
            replicas,
            settings: &passed,
            gate: &paths.gate,
            ready_file: &paths.ready,
            warnings: &warnings(params),
        })?;

        let mut invocation =
            Invocation::new("bash".into(), vec![path_text(&paths.script)], "/status");
        invocation
            .env
            .extend(ENV.map(|(k, v)| (k.to_string(), v.to_string())));
        invocation
            .env
            .insert("XINFERENCE_HOME".into(), path_text(&dir.join("home")));
        invocation.files = vec![
            FileToWrite {
                path: paths.family.clone(),
                contents: serde_json::to_string_pretty(&family)? + "\n",
            },
            FileToWrite {
                path: paths.gate.clone(),
                contents: include_str!("gate.py").to_string(),
            },
            FileToWrite {
                path: paths.script.clone(),
                contents: text,
            },
        ];
        let mut own = space.clone();
        own.launch.extra_args.clear();
        let mut spec = finish(&own, slot, invocation, &rendered)?;
        spec.readiness.ready_file = Some(paths.ready);
        Ok(spec)
    }

    /// The worker's metrics exporter, which otherwise takes a random port.
    fn extra_ports(&self) -> usize {
        1
    }
}

/// The files of one trial's launch.
struct Paths {
    family: PathBuf,
    gate: PathBuf,
    script: PathBuf,
    ready: PathBuf,
}

impl Paths {
    fn in_dir(dir: &Path) -> Paths {
        Paths {
            family: dir.join("model.json"),
            gate: dir.join("gate.py"),
            script: dir.join("launch.sh"),
            ready: dir.join("ready"),
        }
    }
}

fn path_text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// `name` with only the characters a model name may hold.
fn sanitized(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// What the log should say about a config XInference serves worse than it reads.
fn warnings(params: &Params) -> Vec<String> {
    let slots = params.get("n_parallel").and_then(Value::as_i64);
    let threads = params.get("n_threads").and_then(Value::as_i64).unwrap_or(0);
    let cap = REQUESTS_PER_REPLICA.max(threads);
    match slots {
        Some(n) if n > cap => vec![format!(
            "n_parallel {n} exceeds the {cap} requests XInference runs at once per llama.cpp \
             replica; the slots past {cap} stay idle"
        )],
        _ => Vec::new(),
    }
}

/// What marks a failure in the log: the launch script's and XInference's own lines.
static LOG: LogPatterns = LogPatterns {
    // A replica's process killed (xoscar's text for its closed socket), as the launch script
    // and XInference's own client word it.
    oom: &[
        "its socket closed (killed, most often by the kernel for want of memory)",
        "closed: 0 bytes read on a total of",
    ],
    arg_refusals: &[
        "error: XInference did not apply a setting",
        "error: XInference refused",
        "Error: Failed to launch model",
    ],
    config_checks: &[],
};

/// What infertune knows of this engine.
pub(crate) static ENGINE: Description = Description {
    launch: &Xinference,
    rules: &rules::PACK,
    log: &LOG,
    catalogues: &[(
        "xinference-4.1.0.json",
        include_str!("xinference-4.1.0.json"),
    )],
    expert: &[expert::SETTINGS],
};

#[cfg(test)]
mod tests;
