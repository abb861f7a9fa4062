//! Secrets of a space: the values of its launch that must never be written. A value is secret
//! when it is
//! - a `launch.env` value whose name has a `_`-separated word ending in `TOKEN`, `KEY`, `SECRET`
//!   or `PASSWORD` (`HF_TOKEN`, `OPENAI_API_KEY`, `APIKEY`; not `TOKENIZERS_PARALLELISM`);
//! - the value of a known flag (`--api-key`, `--hf-token`, …) in `launch.extra_args` or
//!   `launch.command`, as the next argument or after `=`;
//! - a `launch.env` value or `launch.extra_args` argument given whole as `${VAR}`, or what any
//!   `${VAR}` of those fields with such a name stands for.
//!
//! Each secret has the variable a script should take it from: `VAR` for `${VAR}`, the env name
//! itself, or `INFERTUNE_SECRET_<FLAG>` (`--api-key` → `INFERTUNE_SECRET_API_KEY`).

use std::fmt;

/// What a secret is written as.
pub(crate) const MASK: &str = "***";

/// Secrets shorter than this are masked only where a whole word is the secret, so that a short
/// value ("1") does not mask every occurrence of its text in a log.
const MIN_SUBSTRING: usize = 4;

/// Flags whose value is a secret.
const SECRET_FLAGS: &[&str] = &[
    "--api-key",
    "--admin-api-key",
    "--hf-token",
    "--token",
    "--password",
    "--secret",
    "--ssl-keyfile-password",
];

/// One secret value and the environment variable that holds it for a script.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    /// The value.
    pub value: String,
    /// The variable a script reads it from.
    pub variable: String,
}

/// The secrets of a space.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secrets {
    list: Vec<Secret>,
}

/// A part of a text: as written, or a secret.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    /// Text that is no secret.
    Text(&'a str),
    /// A secret's place.
    Secret(&'a Secret),
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({MASK} from ${})", self.variable)
    }
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.list).finish()
    }
}

impl Secrets {
    /// Add `value`, read from `variable`; an empty value or one already known is left out.
    pub fn add(&mut self, value: &str, variable: &str) {
        if !value.is_empty() && !self.list.iter().any(|s| s.value == value) {
            self.list.push(Secret {
                value: value.to_string(),
                variable: variable.to_string(),
            });
        }
    }

    /// True when there is none.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// `text` in pieces: a text equal to a secret is that secret; otherwise every occurrence of
    /// a secret of at least `MIN_SUBSTRING` characters (the longest where two start together).
    pub fn split<'a>(&'a self, text: &'a str) -> Vec<Piece<'a>> {
        if let Some(whole) = self.list.iter().find(|s| s.value == text) {
            return vec![Piece::Secret(whole)];
        }
        let mut pieces = Vec::new();
        let mut rest = text;
        loop {
            let next = self
                .list
                .iter()
                .filter(|s| s.value.len() >= MIN_SUBSTRING)
                .filter_map(|s| rest.find(&s.value).map(|at| (at, s)))
                .min_by_key(|(at, s)| (*at, std::cmp::Reverse(s.value.len())));
            let Some((at, secret)) = next else { break };
            if at > 0 {
                pieces.push(Piece::Text(&rest[..at]));
            }
            pieces.push(Piece::Secret(secret));
            rest = &rest[at + secret.value.len()..];
        }
        if !rest.is_empty() || pieces.is_empty() {
            pieces.push(Piece::Text(rest));
        }
        pieces
    }

    /// `text` with every secret (as [`Secrets::split`] finds them) replaced by [`MASK`].
    pub(crate) fn scrub(&self, text: &str) -> String {
        if self.is_empty() {
            return text.to_string();
        }
        self.split(text)
            .into_iter()
            .map(|p| match p {
                Piece::Text(t) => t,
                Piece::Secret(_) => MASK,
            })
            .collect()
    }
}

/// True when the environment variable `name` holds a secret.
pub(crate) fn is_secret_name(name: &str) -> bool {
    name.to_ascii_uppercase().split('_').any(|word| {
        ["TOKEN", "KEY", "SECRET", "PASSWORD"]
            .iter()
            .any(|m| word.ends_with(m))
    })
}

/// True when the value of `flag` is a secret.
pub(crate) fn is_secret_flag(flag: &str) -> bool {
    SECRET_FLAGS.contains(&flag)
}

/// The variable a script reads the value of `flag` from: `--api-key` → `INFERTUNE_SECRET_API_KEY`.
pub(crate) fn flag_variable(flag: &str) -> String {
    format!(
        "INFERTUNE_SECRET_{}",
        variable_text(flag.trim_start_matches('-'))
    )
}

/// The variable a script reads the env value `name` from: `name` itself when a shell can name
/// it, else `INFERTUNE_SECRET_<NAME>`.
pub(crate) fn env_variable(name: &str) -> String {
    let mut chars = name.chars();
    let shell_name = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if shell_name {
        name.to_string()
    } else {
        format!("INFERTUNE_SECRET_{}", variable_text(name))
    }
}

fn variable_text(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets() -> Secrets {
        let mut s = Secrets::default();
        s.add("hf_abcdef", "HF_TOKEN");
        s.add("hf_abcdef_longer", "LONG");
        s.add("1", "SHORT");
        s
    }

    #[test]
    fn names_and_flags_that_hold_secrets() {
        for name in [
            "HF_TOKEN",
            "OPENAI_API_KEY",
            "APIKEY",
            "db_password",
            "MY_SECRET",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in ["TOKENIZERS_PARALLELISM", "HF_HOME", "KEYFILE", "MAX_TOKENS"] {
            assert!(!is_secret_name(name), "{name}");
        }
        assert!(is_secret_flag("--api-key") && !is_secret_flag("--ssl-keyfile"));
        assert_eq!(flag_variable("--api-key"), "INFERTUNE_SECRET_API_KEY");
        assert_eq!(env_variable("HF_TOKEN"), "HF_TOKEN");
        assert_eq!(env_variable("my.key"), "INFERTUNE_SECRET_MY_KEY");
    }

    #[test]
    fn scrub_masks_every_occurrence_and_short_secrets_only_as_whole_words() {
        let s = secrets();
        assert_eq!(
            s.scrub("a hf_abcdef_longer b hf_abcdef c 1 --n=16"),
            "a *** b *** c 1 --n=16"
        );
        assert_eq!(s.scrub("1"), "***");
        assert_eq!(s.scrub(""), "");
        assert_eq!(
            s.split("x=hf_abcdef"),
            [Piece::Text("x="), Piece::Secret(&s.list[0])]
        );
    }

    #[test]
    fn debug_output_names_variables_not_values() {
        let text = format!("{:?}", secrets());
        assert!(
            text.contains("HF_TOKEN") && !text.contains("hf_abcdef"),
            "{text}"
        );
    }
}
