//! Engines configured entirely by command-line flags (vLLM, SGLang, llama.cpp): one shape
//! description each, one shared builder.

use super::assemble::{device_env, finish, program_and_leading, Invocation};
use super::render::{render_params, BoolStyle, DefaultTarget};
use super::{Engine, Slot};
use crate::launch::{ContainerImage, LaunchSpec};
use crate::record::Params;
use crate::space::StudySpec;

/// How the model path is passed.
pub(crate) enum ModelArg {
    /// Positional after a leading `serve`, else this flag (vLLM).
    PositionalAfterServe(&'static str),
    /// Always this flag.
    Flag(&'static str),
}

/// The command-line conventions of one engine.
pub(crate) struct CliShape {
    /// Engine name for messages.
    pub label: &'static str,
    /// Program and leading args unless `launch.command` overrides them.
    pub default_command: &'static [&'static str],
    /// How the model is passed.
    pub model: ModelArg,
    /// Flag carrying the served model name.
    pub served_name_flag: &'static str,
    /// Pass the served name even when the space sets none (the model path then), for engines
    /// whose `/v1/models` would otherwise list another name.
    pub always_name: bool,
    /// Flags every launch needs (e.g. one that turns on `/metrics`), added unless the config
    /// or `launch.extra_args` already passes them.
    pub required_flags: &'static [&'static str],
    /// Boolean spelling.
    pub bools: BoolStyle,
    /// The Prometheus counter of generated tokens, when the engine has one.
    pub output_token_counter: Option<&'static str>,
    /// Its usual container image on a platform (`rules.platform`).
    pub image: fn(Option<&str>) -> Option<ContainerImage>,
}

impl Engine for CliShape {
    fn launch_spec(
        &self,
        space: &StudySpec,
        params: &Params,
        slot: &Slot,
    ) -> anyhow::Result<LaunchSpec> {
        build(self, space, params, slot)
    }

    fn output_token_counter(&self) -> Option<&'static str> {
        self.output_token_counter
    }

    fn own_command(&self) -> &'static [&'static str] {
        self.default_command
    }

    fn image(&self, platform: Option<&str>) -> Option<ContainerImage> {
        (self.image)(platform)
    }
}

/// `program leading… <model> --host H --port P [<served-name flag> N] <param flags…>
/// <required flags…>`.
fn build(
    shape: &CliShape,
    space: &StudySpec,
    params: &Params,
    slot: &Slot,
) -> anyhow::Result<LaunchSpec> {
    let mut rendered = render_params(space, params, shape.bools, DefaultTarget::Flag)?;
    rendered.reject_config_paths(shape.label)?;
    let (program, mut args) = program_and_leading(space, shape.default_command);
    let model = space.engine.model.clone();
    match shape.model {
        ModelArg::PositionalAfterServe(_) if args.last().is_some_and(|a| a == "serve") => {
            args.push(model)
        }
        ModelArg::PositionalAfterServe(flag) | ModelArg::Flag(flag) => {
            args.extend([flag.to_string(), model])
        }
    }
    args.extend([
        "--host".to_string(),
        space.launch.host.clone(),
        "--port".to_string(),
        slot.port.to_string(),
    ]);
    if shape.always_name || space.engine.served_model_name.is_some() {
        args.extend([
            shape.served_name_flag.to_string(),
            space.engine.served_name().to_string(),
        ]);
    }
    args.append(&mut rendered.flags);
    for flag in shape.required_flags {
        let given = |list: &[String]| list.iter().any(|a| a == flag);
        if !given(&args) && !given(&space.launch.extra_args) {
            args.push(flag.to_string());
        }
    }
    let mut invocation = Invocation::new(program, args, "/health");
    invocation.env.extend(device_env(space, slot));
    finish(space, slot, invocation, &rendered)
}
