//! SGLang: `sglang-config.yaml` for `python3 -m sglang.launch_server --config` (keys are the
//! long flag names without their dashes; flags alone are `true`) and `sglang.env`.

use super::deploy::Server;
use super::engine_config::{self, ConfigFiles};
use super::flag_yaml::Spelling;

/// The config file's name.
pub const CONFIG: &str = "sglang-config.yaml";
/// The environment file's name.
pub const ENV: &str = "sglang.env";

/// The files of `server`.
pub(crate) fn render(server: &Server<'_>) -> anyhow::Result<ConfigFiles> {
    let spelling = Spelling {
        positional: None,
        negatable: false,
    };
    let command = format!("python3 {}", server.leading.join(" "));
    engine_config::render(server, spelling, &command, CONFIG, ENV)
}
