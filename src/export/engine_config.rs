//! What the vLLM and SGLang config exports share: the engine's arguments as a YAML config file
//! (see [`super::flag_yaml`]) after the header, with the command that starts it, and the
//! environment as a file to source.

use super::best_sh::word;
use super::deploy::{comment, header, Server};
use super::env_file;
use super::flag_yaml::{config_of, Spelling};

/// A config file and its environment file.
pub(crate) struct ConfigFiles {
    /// The YAML config.
    pub yaml: String,
    /// The environment file.
    pub env: String,
}

/// The files of `server`, named `yaml_name` and `env_name`, started by `command` (the engine's
/// program and leading words, e.g. `vllm serve`), its arguments spelled as `spelling` says.
pub(crate) fn render(
    server: &Server<'_>,
    spelling: Spelling,
    command: &str,
    yaml_name: &str,
    env_name: &str,
) -> anyhow::Result<ConfigFiles> {
    let secrets = server.secrets();
    let config = config_of(&server.args, spelling, secrets);
    let mut start = format!("Start it: . ./{env_name}; {command} --config {yaml_name}");
    for (group, _) in &config.left_out {
        for w in group {
            start.push(' ');
            start.push_str(&word(w, secrets)?);
        }
    }
    let mut lines = header(server.best);
    lines.push(start);
    for (group, why) in &config.left_out {
        lines.push(format!(
            "`{}` stays on the command line: {why}",
            group.first().map_or("", String::as_str)
        ));
    }
    let variables = server.secret_variables();
    if !variables.is_empty() {
        lines.push(format!(
            "Secrets come from the environment: {}",
            variables.join(", ")
        ));
    }
    let yaml = format!("{}{}", comment(&lines), serde_saphyr::to_string(&config)?);
    let mut env_lines = header(server.best);
    env_lines.push(format!(
        "Environment of {yaml_name}: source it with `. ./{env_name}`"
    ));
    let env_header = comment(&env_lines);
    let env = env_file::render(&env_header, server.env(), secrets)?;
    Ok(ConfigFiles { yaml, env })
}
