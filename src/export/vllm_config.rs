//! vLLM: `vllm-config.yaml` for `vllm serve --config` (keys are the long flag names without
//! their dashes; the model is the `model` key) and `vllm.env`, the server's environment.

use super::deploy::Server;
use super::engine_config::{self, ConfigFiles};
use super::flag_yaml::Spelling;

/// The config file's name.
pub const CONFIG: &str = "vllm-config.yaml";
/// The environment file's name.
pub const ENV: &str = "vllm.env";

/// The files of `server`.
pub(crate) fn render(server: &Server<'_>) -> anyhow::Result<ConfigFiles> {
    let spelling = Spelling {
        positional: Some("model"),
        negatable: true,
    };
    let command = format!("vllm {}", server.leading.join(" "));
    engine_config::render(server, spelling, &command, CONFIG, ENV)
}
