//! Engine arguments as a flat YAML config, as `vllm serve --config` and SGLang's
//! `launch_server --config` read one: a key per long flag, named without its dashes; `true` for
//! a flag alone; a list for a flag with several values. What a config file cannot hold (a
//! secret, a short or repeated flag, vLLM's `--no-x`, which its config loader drops when it
//! reads `x: false`) stays on the command line.

use crate::space::secrets::{Piece, Secrets};
use serde::ser::SerializeMap as _;

/// One value of a config key.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub(crate) enum Scalar {
    /// A flag alone (`true`) or negated (`false`).
    Bool(bool),
    /// An integer written as the engine's parser prints it back.
    Int(i64),
    /// A decimal written as the engine's parser prints it back.
    Float(f64),
    /// Anything else, verbatim.
    Str(String),
    /// Several values of one flag.
    List(Vec<Scalar>),
}

/// The config of an argument list, in argument order.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct FlagConfig {
    /// Keys and values.
    pub entries: Vec<(String, Scalar)>,
    /// Argument groups (a flag with its values) the file leaves to the command line, each
    /// with why.
    pub left_out: Vec<(Vec<String>, &'static str)>,
}

impl serde::Serialize for FlagConfig {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.entries.len()))?;
        for (key, value) in &self.entries {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// How an engine spells what the config file holds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Spelling {
    /// Key of leading positional arguments (vLLM's model: `model`), if the engine takes one.
    pub positional: Option<&'static str>,
    /// `--no-x` negates `--x` (vLLM); such a flag stays on the command line.
    pub negatable: bool,
}

/// The config of `args` (flags after the engine's command) with `secrets` left out.
pub(crate) fn config_of(args: &[String], spelling: Spelling, secrets: &Secrets) -> FlagConfig {
    let mut out = FlagConfig::default();
    let has_secret = |words: &[String]| {
        words.iter().any(|w| {
            secrets
                .split(w)
                .iter()
                .any(|p| matches!(p, Piece::Secret(_)))
        })
    };
    for group in split_groups(args) {
        if has_secret(&group) {
            out.left_out.push((group, "it holds a secret"));
            continue;
        }
        let (head, values) = group.split_first().expect("groups are never empty");
        let key = match head.strip_prefix("--") {
            Some(name) => name.to_string(),
            None if !head.starts_with('-') => match spelling.positional {
                Some(key) => {
                    let mut all = vec![head.clone()];
                    all.extend(values.iter().cloned());
                    out.push_unique(key.to_string(), list_or_one(&all), group);
                    continue;
                }
                None => {
                    out.left_out.push((group, "it is a positional argument"));
                    continue;
                }
            },
            None => {
                out.left_out
                    .push((group, "a config key must be a long flag"));
                continue;
            }
        };
        let (key, value) = match key.split_once('=') {
            Some((k, v)) if values.is_empty() => (k.to_string(), Scalar::Str(v.to_string())),
            Some(_) => {
                out.left_out
                    .push((group, "it is not a flag and its values"));
                continue;
            }
            None if values.is_empty() => {
                if spelling.negatable && key.starts_with("no-") {
                    out.left_out
                        .push((group, "the engine's config loader drops a false value"));
                    continue;
                }
                (key, Scalar::Bool(true))
            }
            None => (key, list_or_one(values)),
        };
        let value = match value {
            Scalar::Str(text) => typed(&text),
            other => other,
        };
        out.push_unique(key, value, group);
    }
    out
}

impl FlagConfig {
    /// Add `key`, or leave `group` to the command line when the key is there already.
    fn push_unique(&mut self, key: String, value: Scalar, group: Vec<String>) {
        if self.entries.iter().any(|(k, _)| *k == key) {
            self.left_out
                .push((group, "the flag is given more than once"));
        } else {
            self.entries.push((key, value));
        }
    }
}

/// `args` split before each word that starts with `--` (or a single `-` and a letter).
fn split_groups(args: &[String]) -> Vec<Vec<String>> {
    let mut groups: Vec<Vec<String>> = Vec::new();
    for arg in args {
        let is_flag = arg.starts_with("--")
            || (arg.starts_with('-') && arg[1..].starts_with(|c: char| c.is_ascii_alphabetic()));
        match groups.last_mut() {
            Some(group) if !is_flag => group.push(arg.clone()),
            _ => groups.push(vec![arg.clone()]),
        }
    }
    groups
}

fn list_or_one(values: &[String]) -> Scalar {
    match values {
        [one] => typed(one),
        many => Scalar::List(many.iter().map(|v| typed(v)).collect()),
    }
}

/// `text` as a YAML number when the engine's parser (Python's `str()` of the YAML value) gives
/// the same text back, else as a string.
fn typed(text: &str) -> Scalar {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let canonical_int = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    if canonical_int {
        if let Ok(n) = text.parse::<i64>() {
            return Scalar::Int(n);
        }
    }
    if text.contains('.') && !text.contains(['e', 'E']) {
        if let Ok(x) = text.parse::<f64>() {
            if x.is_finite() && format!("{x:?}") == text {
                return Scalar::Float(x);
            }
        }
    }
    Scalar::Str(text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        shlex::split(text).unwrap()
    }

    const VLLM: Spelling = Spelling {
        positional: Some("model"),
        negatable: true,
    };

    #[test]
    fn flags_become_keys_with_typed_values_in_argument_order() {
        let args = words(
            "/m/llama --host 0.0.0.0 --port 8000 --max-num-seqs 64 --gpu-memory-utilization 0.9 \
             --no-enable-prefix-caching --enforce-eager --dtype=bfloat16 --max-model-len -1 \
             --middleware a b --seed 007 --block-size 1e3",
        );
        let config = config_of(&args, VLLM, &Secrets::default());
        assert_eq!(
            config.entries,
            [
                ("model".into(), Scalar::Str("/m/llama".into())),
                ("host".into(), Scalar::Str("0.0.0.0".into())),
                ("port".into(), Scalar::Int(8000)),
                ("max-num-seqs".into(), Scalar::Int(64)),
                ("gpu-memory-utilization".into(), Scalar::Float(0.9)),
                ("enforce-eager".into(), Scalar::Bool(true)),
                ("dtype".into(), Scalar::Str("bfloat16".into())),
                ("max-model-len".into(), Scalar::Int(-1)),
                (
                    "middleware".into(),
                    Scalar::List(vec![Scalar::Str("a".into()), Scalar::Str("b".into())])
                ),
                ("seed".into(), Scalar::Str("007".into())),
                ("block-size".into(), Scalar::Str("1e3".into())),
            ]
        );
        assert_eq!(
            config.left_out,
            [(
                words("--no-enable-prefix-caching"),
                "the engine's config loader drops a false value"
            )]
        );
    }

    #[test]
    fn secrets_short_and_repeated_flags_stay_on_the_command_line() {
        let mut secrets = Secrets::default();
        secrets.add("sk-secret-key", "INFERTUNE_SECRET_API_KEY");
        let args = words("--api-key sk-secret-key -tp 2 --x 1 --x 2");
        let config = config_of(&args, VLLM, &secrets);
        assert_eq!(config.entries, [("x".into(), Scalar::Int(1))]);
        let left: Vec<&[String]> = config.left_out.iter().map(|(g, _)| g.as_slice()).collect();
        assert_eq!(
            left,
            [
                words("--api-key sk-secret-key"),
                words("-tp 2"),
                words("--x 2")
            ]
        );
    }

    #[test]
    fn store_true_engines_keep_no_as_part_of_the_name() {
        let sglang = Spelling {
            positional: None,
            negatable: false,
        };
        let config = config_of(&words("--no-x --model-path m"), sglang, &Secrets::default());
        assert_eq!(
            config.entries,
            [
                ("no-x".into(), Scalar::Bool(true)),
                ("model-path".into(), Scalar::Str("m".into()))
            ]
        );
    }

    #[test]
    fn yaml_keeps_strings_that_look_like_other_types_as_strings() {
        let config = FlagConfig {
            entries: vec![
                ("a".into(), Scalar::Str("true".into())),
                ("b".into(), Scalar::Str("64".into())),
                ("c".into(), Scalar::Str("null".into())),
                ("d".into(), Scalar::Int(64)),
                ("e".into(), Scalar::Float(0.9)),
                ("f".into(), Scalar::Bool(false)),
            ],
            left_out: Vec::new(),
        };
        let yaml = serde_saphyr::to_string(&config).unwrap();
        let back: serde_json::Value = serde_saphyr::from_str(&yaml).unwrap();
        assert_eq!(
            back,
            serde_json::json!({"a": "true", "b": "64", "c": "null", "d": 64, "e": 0.9, "f": false}),
            "{yaml}"
        );
    }
}
