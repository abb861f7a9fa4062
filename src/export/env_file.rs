//! The environment of a deployed server as a file a shell sources (`. ./vllm.env`): one
//! `export NAME=value` line each, shell-quoted; a secret is a reference to its variable, which
//! must be set when the file is sourced.

use super::best_sh::word;
use crate::space::secrets::Secrets;
use std::collections::BTreeMap;

/// The file of `env`, after the comment `header` (already `# `-prefixed).
pub(crate) fn render(
    header: &str,
    env: &BTreeMap<String, String>,
    secrets: &Secrets,
) -> anyhow::Result<String> {
    let mut out = String::from(header);
    for (name, value) in env {
        out.push_str(&format!("export {name}={}\n", word(value, secrets)?));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sourcing_the_file_gives_the_values_back_and_secrets_come_from_their_variables() {
        let mut secrets = Secrets::default();
        secrets.add("hf_abcdef", "HF_TOKEN");
        let env: BTreeMap<String, String> = [
            ("A".to_string(), "x y 'z'".to_string()),
            ("HF_TOKEN".to_string(), "hf_abcdef".to_string()),
        ]
        .into();
        let text = render("# h\n", &env, &secrets).unwrap();
        assert!(!text.contains("hf_abcdef"), "{text}");
        let out = std::process::Command::new("bash")
            .args([
                "-c",
                &format!("{text}\nprintf '%s|%s' \"$A\" \"$HF_TOKEN\""),
            ])
            .env_clear()
            .env("HF_TOKEN", "from-env")
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "x y 'z'|from-env");
    }
}
