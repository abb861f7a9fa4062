//! The built-in simulator: `infertune sim serve --host H --port P --model M --card C …`.

use crate::engine::assemble::{device_env, finish, Invocation};
use crate::engine::render::{push_flag, render_params, BoolStyle, DefaultTarget};
use crate::engine::Description;
use crate::engine::{Engine, Slot};
use crate::launch::classify::LogPatterns;
use crate::launch::LaunchSpec;
use crate::record::{Params, Value};
use crate::space::rules::RulePack;
use crate::space::{EngineKind, StudySpec};
use anyhow::Context;

/// The simulator adapter. The program is `launch.command` (program + leading args) when set,
/// else this executable. Parameters are rendered as vLLM flags; a NUMA binding is passed as
/// `--numa "<numactl args>"`, since the simulator models the binding instead of applying it.
pub struct Sim;

impl Engine for Sim {
    fn launch_spec(
        &self,
        space: &StudySpec,
        params: &Params,
        slot: &Slot,
    ) -> anyhow::Result<LaunchSpec> {
        let mut rendered = render_params(space, params, BoolStyle::Negatable, DefaultTarget::Flag)?;
        rendered.reject_config_paths("the simulator")?;
        let (program, mut args) = match &space.launch.command {
            Some(command) if !command.is_empty() => (command[0].clone(), command[1..].to_vec()),
            _ => (
                crate::launch::this_exe::path()
                    .context("cannot locate the infertune executable to run `sim serve`; set launch.command")?
                    .to_string_lossy()
                    .into_owned(),
                Vec::new(),
            ),
        };
        args.extend(
            [
                "sim",
                "serve",
                "--host",
                &space.launch.host,
                "--port",
                &slot.port.to_string(),
                "--model",
                &space.engine.model,
            ]
            .map(String::from),
        );
        if let Some(card) = &space.engine.card {
            args.extend(["--card".to_string(), card.clone()]);
        }
        args.extend([
            "--served-model-name".to_string(),
            space.engine.served_name().to_string(),
        ]);
        args.append(&mut rendered.flags);
        // The simulator models the binding instead of running under numactl.
        if let Some(binding) = rendered.numa.take() {
            push_flag(
                &mut args,
                "--numa",
                &Value::Str(binding),
                BoolStyle::Negatable,
            );
        }
        let mut invocation = Invocation::new(program, args, "/health");
        invocation.env.extend(device_env(space, slot));
        finish(space, slot, invocation, &rendered)
    }

    /// `sim serve` keeps vLLM's counters, so trials cross-check their token counts as with vLLM.
    fn output_token_counter(&self) -> Option<&'static str> {
        Some(crate::engine::vllm::OUTPUT_TOKENS)
    }
}

/// No start-up checks: the simulator refuses configs itself, as the engine it models would.
static NO_RULES: RulePack = RulePack {
    engine: EngineKind::Sim,
    rules: &[],
    platform: "cuda",
    version_query: None,
    // The simulator reads vLLM's names and MindIE's.
    batch_caps: &[super::vllm::BATCH, super::mindie::BATCH],
};

/// What marks a failure in the log: The simulator's argument parser (clap); its start-up failures quote the simulated engine's texts.
static LOG: LogPatterns = LogPatterns {
    oom: &[],
    arg_refusals: &[
        "error: unexpected argument ",
        "error: invalid value ",
        "error: a value is required for ",
    ],
    config_checks: &[],
};

/// What infertune knows of this engine.
pub(crate) static ENGINE: Description = Description {
    launch: &Sim,
    rules: &NO_RULES,
    log: &LOG,
    catalogues: &[],
    expert: &[
        super::vllm::expert::SETTINGS,
        super::mindie::expert::SETTINGS,
    ],
};
