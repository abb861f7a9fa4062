//! `best.sh`: a bash script that writes the winner's files and `exec`s its exact launch. Secrets
//! of the space are not in it: each is a reference to its variable (`"${HF_TOKEN:?set
//! HF_TOKEN}"`), which must be set when the script runs.

use super::{gain_text, mean_text, Best};
use crate::launch::{command_line, command_line_with, quote, LaunchSpec};
use crate::space::secrets::{Piece, Secrets};

/// The script of `best`.
pub fn render(best: &Best<'_>) -> anyhow::Result<String> {
    script(best.launch, &best.space.secrets, &headline(best))
}

/// A script that starts `spec`, its comment line saying `headline`; `secrets` are read from
/// their variables.
fn script(spec: &LaunchSpec, secrets: &Secrets, headline: &str) -> anyhow::Result<String> {
    let q = |s: &str| -> anyhow::Result<String> {
        shlex::try_quote(s)
            .map(|c| c.into_owned())
            .map_err(|e| anyhow::anyhow!("cannot shell-quote {s:?}: {e}"))
    };
    let mut out = String::from("#!/usr/bin/env bash\n");
    out.push_str(&format!(
        "# Winning launch found by infertune: {}\n",
        headline.replace('\n', " ")
    ));
    let variables = variables(spec, secrets);
    if !variables.is_empty() {
        out.push_str(&format!(
            "# Secrets come from the environment: {}\n",
            variables.join(", ")
        ));
    }
    out.push_str("set -euo pipefail\n");
    for file in &spec.files {
        if let Some(parent) = file.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            out.push_str(&format!("mkdir -p {}\n", q(&parent.to_string_lossy())?));
        }
        let mut marker = "INFERTUNE_FILE".to_string();
        while file.contents.lines().any(|l| l == marker) {
            marker.push('_');
        }
        out.push_str(&format!(
            "cat > {} <<'{marker}'\n",
            q(&file.path.to_string_lossy())?
        ));
        let contents = secrets.scrub(&file.contents);
        out.push_str(&contents);
        if !contents.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!("{marker}\n"));
    }
    if let Some(cwd) = &spec.cwd {
        out.push_str(&format!("cd {}\n", q(&cwd.to_string_lossy())?));
    }
    let line = command_line_with(spec, |text| word(text, secrets))?;
    out.push_str(&format!("exec {line}\n"));
    Ok(out)
}

/// `text` as one shell word, each secret in it a reference to its variable that fails when unset.
pub(crate) fn word(text: &str, secrets: &Secrets) -> anyhow::Result<String> {
    secrets
        .split(text)
        .into_iter()
        .map(|piece| match piece {
            Piece::Text(t) => quote(t),
            Piece::Secret(s) => Ok(format!("\"${{{v}:?set {v}}}\"", v = s.variable)),
        })
        .collect()
}

/// The variables the launch of `spec` reads its secrets from, in order of appearance.
fn variables<'a>(spec: &'a LaunchSpec, secrets: &'a Secrets) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    let words = std::iter::once(&spec.program)
        .chain(&spec.args)
        .chain(spec.env.values());
    for text in words {
        for piece in secrets.split(text) {
            if let Piece::Secret(s) = piece {
                if !out.contains(&s.variable.as_str()) {
                    out.push(&s.variable);
                }
            }
        }
    }
    out
}

/// The script's last line: `exec` and the launch's [`command_line`].
pub(crate) fn exec_line(spec: &LaunchSpec) -> anyhow::Result<String> {
    Ok(format!("exec {}", command_line(spec)?))
}

/// What the winner scored, and its gain over the baseline.
fn headline(best: &Best<'_>) -> String {
    let (o, w) = (best.study.objective, best.winner);
    let mut line = format!(
        "{} {} = {} (trial {})",
        o.direction.as_str(),
        o.metric,
        mean_text(w.mean, w.ci95, w.runs),
        w.record.id.number
    );
    if let (Some(b), Some(g)) = (&w.baseline, w.gain_pct) {
        line.push_str(&format!(
            "; baseline {}, gain {}",
            mean_text(b.mean, b.ci95, b.runs),
            gain_text(g, w.gain_ci95)
        ));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::{FileToWrite, Readiness};

    fn spec() -> LaunchSpec {
        LaunchSpec {
            program: "numactl".into(),
            args: vec![
                "-N".into(),
                "0".into(),
                "serve".into(),
                "a b".into(),
                "$HOME".into(),
            ],
            env: [("K".to_string(), "v w".to_string())].into(),
            files: vec![FileToWrite {
                path: "/tmp/x/config.json".into(),
                contents: "{\n\"a\": 1\n}\nINFERTUNE_FILE".into(),
            }],
            cwd: Some("/srv/my dir".into()),
            host: "127.0.0.1".into(),
            port: 1025,
            readiness: Readiness::chat("m"),
        }
    }

    #[test]
    fn best_sh_quotes_every_word_and_writes_files_verbatim() {
        let text = script(&spec(), &Secrets::default(), "x").unwrap();
        let exec = text.lines().last().unwrap();
        assert_eq!(
            shlex::split(exec).unwrap(),
            ["exec", "env", "K=v w", "numactl", "-N", "0", "serve", "a b", "$HOME"]
        );
        assert!(exec.contains("'$HOME'"), "{exec}");
        assert!(text.contains("cat > /tmp/x/config.json <<'INFERTUNE_FILE_'\n{\n\"a\": 1\n}\nINFERTUNE_FILE\nINFERTUNE_FILE_\n"), "{text}");
        assert!(text.contains("cd '/srv/my dir'\n"), "{text}");
    }

    #[test]
    fn best_sh_reads_secrets_from_their_variables_and_never_holds_them() {
        let mut secrets = Secrets::default();
        secrets.add("tok en'1", "HF_TOKEN");
        secrets.add("sk-api-key", "INFERTUNE_SECRET_API_KEY");
        let mut launch = spec();
        launch.env.insert("HF_TOKEN".into(), "tok en'1".into());
        launch
            .args
            .extend(["--api-key".into(), "--key=sk-api-key!".into()]);
        launch.files.clear();
        launch.cwd = None;
        let text = script(&launch, &secrets, "x").unwrap();
        assert!(
            !text.contains("tok en") && !text.contains("sk-api-key"),
            "{text}"
        );
        assert!(
            text.contains(
                "# Secrets come from the environment: INFERTUNE_SECRET_API_KEY, HF_TOKEN\n"
            ),
            "{text}"
        );
        // bash expands the references back into the exact words.
        let exec = text
            .lines()
            .last()
            .unwrap()
            .replacen("exec env ", "printf '%s\\n' ", 1);
        let run = |set: bool| {
            let mut bash = std::process::Command::new("bash");
            bash.args(["-c", &exec]).env_clear();
            if set {
                bash.env("HF_TOKEN", "tok en'1")
                    .env("INFERTUNE_SECRET_API_KEY", "sk-api-key");
            }
            bash.output().unwrap()
        };
        let out = run(true);
        let words: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        assert_eq!(words[..2], ["HF_TOKEN=tok en'1", "K=v w"]);
        assert_eq!(words[words.len() - 2..], ["--api-key", "--key=sk-api-key!"]);
        let unset = run(false);
        assert!(!unset.status.success());
        assert!(
            String::from_utf8_lossy(&unset.stderr).contains("set "),
            "{unset:?}"
        );
    }
}
