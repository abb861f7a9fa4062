//! Steps every adapter shares: the program (or `launch.command` override), device and extra
//! environment, extra args, the numactl prefix, and readiness settings.

use super::render::Rendered;
use super::{numa, Slot};
use crate::launch::{FileToWrite, LaunchSpec, Readiness, ReadyRequest};
use crate::probe::Api;
use crate::space::StudySpec;
use anyhow::Result;
use std::collections::BTreeMap;

/// What an adapter built, before the shared finishing steps.
pub(crate) struct Invocation {
    /// Program to run.
    pub program: String,
    /// Its argv after the program.
    pub args: Vec<String>,
    /// Environment the adapter sets (merged over `launch.env`, under parameter env).
    pub env: BTreeMap<String, String>,
    /// Files to write before the spawn.
    pub files: Vec<FileToWrite>,
    /// Health path when the space sets none.
    pub default_health: &'static str,
    /// Readiness over https.
    pub https: bool,
}

impl Invocation {
    /// An invocation of `program` with `args` and nothing else.
    pub fn new(program: String, args: Vec<String>, default_health: &'static str) -> Self {
        Invocation {
            program,
            args,
            env: BTreeMap::new(),
            files: Vec::new(),
            default_health,
            https: false,
        }
    }
}

/// `launch.command` when the space sets one (program + leading args), else `default`.
pub(crate) fn program_and_leading(space: &StudySpec, default: &[&str]) -> (String, Vec<String>) {
    let parts: Vec<String> = match &space.launch.command {
        Some(command) if !command.is_empty() => command.clone(),
        _ => default.iter().map(|s| s.to_string()).collect(),
    };
    let mut parts = parts.into_iter();
    let program = parts.next().unwrap_or_default();
    (program, parts.collect())
}

/// The variables that restrict the engine to the slot's accelerators, when it has any, by
/// `rules.platform`: `ASCEND_RT_VISIBLE_DEVICES` on `npu`, `HIP_VISIBLE_DEVICES` on `rocm`,
/// MetaX's `MACA_VISIBLE_DEVICES` (and `CUDA_VISIBLE_DEVICES`, which its vLLM reads) on
/// `maca`, `CUDA_VISIBLE_DEVICES` otherwise.
pub(crate) fn device_env(space: &StudySpec, slot: &Slot) -> Vec<(String, String)> {
    if slot.devices.is_empty() {
        return Vec::new();
    }
    let vars: &[&str] = match space.rules.platform.as_deref() {
        Some("npu") => &["ASCEND_RT_VISIBLE_DEVICES"],
        Some("rocm") => &["HIP_VISIBLE_DEVICES"],
        Some("maca") => &["MACA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"],
        _ => &["CUDA_VISIBLE_DEVICES"],
    };
    let list: Vec<String> = slot.devices.iter().map(u32::to_string).collect();
    vars.iter()
        .map(|var| (var.to_string(), list.join(",")))
        .collect()
}

/// Build the final spec: extra args, merged env (`launch.env` < adapter < the parameters'
/// `env` targets), the numactl prefix for the parameters' NUMA binding, and readiness.
pub(crate) fn finish(
    space: &StudySpec,
    slot: &Slot,
    invocation: Invocation,
    rendered: &Rendered,
) -> Result<LaunchSpec> {
    let Invocation {
        program,
        mut args,
        env: adapter_env,
        files,
        default_health,
        https,
    } = invocation;
    args.extend(space.launch.extra_args.iter().cloned());
    let mut env = space.launch.env.clone();
    env.extend(adapter_env);
    env.extend(rendered.env.iter().map(|(k, v)| (k.clone(), v.clone())));
    let (program, args) = match rendered.numa.as_deref() {
        Some(binding) => numa::wrap(program, args, binding, std::env::var_os("PATH").as_deref())?,
        None => (program, args),
    };
    Ok(LaunchSpec {
        program,
        args,
        env,
        files,
        cwd: Some(slot.workdir.clone()),
        host: space.launch.host.clone(),
        port: slot.port,
        readiness: Readiness {
            health_path: space
                .launch
                .health_path
                .clone()
                .unwrap_or_else(|| default_health.to_string()),
            served_model: space.engine.served_name().to_string(),
            api: match space.probe.api {
                Api::Chat => ReadyRequest::Chat,
                Api::Completions => ReadyRequest::Completions,
            },
            https,
            ready_file: None,
        },
    })
}
