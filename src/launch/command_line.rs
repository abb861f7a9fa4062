//! A launch as one shell command line, for `infertune launch` and the exported `best.sh`.

use super::LaunchSpec;
use anyhow::{bail, Result};

/// `[env K=V …] program args…` with every word quoted for a POSIX shell (via shlex), so that
/// pasting it into a shell, or `exec`ing it from a script, starts exactly this launch. Files the
/// launch writes are not shown.
pub fn command_line(spec: &LaunchSpec) -> Result<String> {
    command_line_with(spec, quote)
}

/// [`command_line`] with each word (an env `K=V`, the program, an argument) written by `word`
/// instead of [`quote`].
pub(crate) fn command_line_with(
    spec: &LaunchSpec,
    word: impl Fn(&str) -> Result<String>,
) -> Result<String> {
    let mut words = Vec::with_capacity(spec.env.len() + spec.args.len() + 2);
    if !spec.env.is_empty() {
        words.push("env".to_string());
    }
    for (key, value) in &spec.env {
        if key.is_empty() || key.contains('=') {
            bail!("environment variable name `{key}` cannot be passed by `env`; leave out `=`");
        }
        words.push(word(&format!("{key}={value}"))?);
    }
    words.push(word(&spec.program)?);
    for arg in &spec.args {
        words.push(word(arg)?);
    }
    Ok(words.join(" "))
}

/// `word` quoted for a POSIX shell (unquoted where nothing needs quoting; never empty).
pub fn quote(word: &str) -> Result<String> {
    match shlex::try_quote(word) {
        Ok(quoted) => Ok(quoted.into_owned()),
        Err(_) => bail!(
            "`{}` contains a NUL byte, which no command line can carry",
            word.escape_debug()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::Readiness;

    fn spec(env: &[(&str, &str)]) -> LaunchSpec {
        LaunchSpec {
            program: "serve".into(),
            args: vec!["--label".into(), "a b".into()],
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            files: vec![],
            cwd: None,
            host: "127.0.0.1".into(),
            port: 8000,
            readiness: Readiness::chat("m"),
        }
    }

    #[test]
    fn env_goes_through_env_one_quoted_word_each() {
        assert_eq!(command_line(&spec(&[])).unwrap(), "serve --label 'a b'");
        assert_eq!(
            command_line(&spec(&[("A", "it's"), ("B.C", "1")])).unwrap(),
            r#"env "A=it's" 'B.C=1' serve --label 'a b'"#
        );
        let err = command_line(&spec(&[("A=B", "1")])).unwrap_err();
        assert!(err.to_string().contains("`A=B`"), "{err}");
    }
}
