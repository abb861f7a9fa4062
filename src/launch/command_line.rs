//! A launch as one shell command line, for `check`, `launch` and the exported best.sh.

use super::LaunchSpec;
use anyhow::{bail, Result};

/// `K=V … program args…` with every word quoted for a POSIX shell (via shlex), so that
/// pasting it into a shell starts exactly this launch. Files the launch writes are not shown.
pub fn command_line(spec: &LaunchSpec) -> Result<String> {
    let mut words = Vec::with_capacity(spec.env.len() + spec.args.len() + 1);
    for (key, value) in &spec.env {
        let valid = key.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            bail!("environment variable name `{key}` cannot be set from a shell; use letters, digits and `_`");
        }
        words.push(format!("{key}={}", quote(value)?));
    }
    words.push(quote(&spec.program)?);
    for arg in &spec.args {
        words.push(quote(arg)?);
    }
    Ok(words.join(" "))
}

fn quote(word: &str) -> Result<String> {
    match shlex::try_quote(word) {
        Ok(quoted) => Ok(quoted.into_owned()),
        Err(_) => bail!(
            "`{}` contains a NUL byte, which no command line can carry",
            word.escape_debug()
        ),
    }
}
