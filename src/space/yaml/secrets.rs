//! Which values of a launch section are secrets (the rules are in [`crate::space::secrets`]),
//! judged on the fields as written and as expanded.

use super::expand::Expanded;
use crate::space::secrets::{env_variable, flag_variable, is_secret_flag, is_secret_name, Secrets};

/// Add the secrets of the `launch.env` entry `name`.
pub fn env(secrets: &mut Secrets, name: &str, value: &Expanded) {
    named_refs(secrets, value);
    if let Some(variable) = value.whole_ref() {
        secrets.add(&value.text, variable);
    } else if is_secret_name(name) {
        secrets.add(&value.text, &env_variable(name));
    }
}

/// Add the secrets of the arguments `args`; `whole_refs`: an argument given whole as `${VAR}`
/// is a secret (`launch.extra_args`, not `launch.command`, whose references are paths).
pub fn args(secrets: &mut Secrets, args: &[Expanded], whole_refs: bool) {
    for (i, arg) in args.iter().enumerate() {
        named_refs(secrets, arg);
        if whole_refs {
            if let Some(variable) = arg.whole_ref() {
                secrets.add(&arg.text, variable);
            }
        }
        if is_secret_flag(&arg.text) {
            if let Some(value) = args.get(i + 1) {
                let variable = value
                    .whole_ref()
                    .map_or_else(|| flag_variable(&arg.text), str::to_string);
                secrets.add(&value.text, &variable);
            }
        } else if let Some((flag, value)) = arg.text.split_once('=') {
            if is_secret_flag(flag) {
                let whole =
                    (arg.refs.iter()).find(|(name, _)| arg.raw == format!("{flag}=${{{name}}}"));
                let variable = whole.map_or_else(|| flag_variable(flag), |(name, _)| name.clone());
                secrets.add(value, &variable);
            }
        }
    }
}

/// What each reference to a secret-named variable stands for.
fn named_refs(secrets: &mut Secrets, field: &Expanded) {
    for (name, value) in &field.refs {
        if is_secret_name(name) {
            secrets.add(value, name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::yaml::expand::expand_refs;

    fn field(raw: &str) -> Expanded {
        expand_refs(raw, |name| Some(format!("<{name}-value>"))).unwrap()
    }

    #[test]
    fn env_names_flags_and_references_make_secrets() {
        let mut s = Secrets::default();
        env(&mut s, "HF_TOKEN", &field("hf-literal"));
        env(&mut s, "AUTH", &field("${AUTH_SOURCE}"));
        env(&mut s, "HF_HOME", &field("${HOME}/hf"));
        args(
            &mut s,
            &[
                field("--api-key"),
                field("sk-literal"),
                field("--hf-token=${T}"),
                field("--download-dir"),
                field("${DL}"),
            ],
            true,
        );
        args(&mut s, &[field("${VENV}/bin/serve")], false);
        let text = "hf-literal <AUTH_SOURCE-value> <HOME-value>/hf sk-literal <T-value> <DL-value> <VENV-value>";
        assert_eq!(
            s.scrub(text),
            "*** *** <HOME-value>/hf *** *** *** <VENV-value>"
        );
        let values = [
            "hf-literal",
            "<AUTH_SOURCE-value>",
            "sk-literal",
            "<T-value>",
            "<DL-value>",
        ];
        let variables: Vec<_> = values
            .iter()
            .map(|v| match s.split(v)[0] {
                crate::space::secrets::Piece::Secret(secret) => secret.variable.clone(),
                other => panic!("{v}: {other:?}"),
            })
            .collect();
        assert_eq!(
            variables,
            [
                "HF_TOKEN",
                "AUTH_SOURCE",
                "INFERTUNE_SECRET_API_KEY",
                "T",
                "DL"
            ]
        );
    }
}
