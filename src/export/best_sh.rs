//! `best.sh`: a bash script that writes the winner's files and `exec`s its exact launch.

use super::{gain_text, mean_text, Best};
use crate::launch::{command_line, LaunchSpec};

/// The script of `best`.
pub fn render(best: &Best<'_>) -> anyhow::Result<String> {
    script(best.launch, &headline(best))
}

/// A script that starts `spec`, its comment line saying `headline`.
fn script(spec: &LaunchSpec, headline: &str) -> anyhow::Result<String> {
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
        out.push_str(&file.contents);
        if !file.contents.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!("{marker}\n"));
    }
    if let Some(cwd) = &spec.cwd {
        out.push_str(&format!("cd {}\n", q(&cwd.to_string_lossy())?));
    }
    out.push_str(&format!("{}\n", exec_line(spec)?));
    Ok(out)
}

/// The script's last line: `exec` and the launch's [`command_line`].
pub fn exec_line(spec: &LaunchSpec) -> anyhow::Result<String> {
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
        w.record.number
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
    use crate::launch::ReadyRequest;
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
            readiness: Readiness {
                health_path: "/health".into(),
                served_model: "m".into(),
                api: ReadyRequest::Chat,
                https: false,
            },
        }
    }

    #[test]
    fn best_sh_quotes_every_word_and_writes_files_verbatim() {
        let text = script(&spec(), "x").unwrap();
        let exec = text.lines().last().unwrap();
        assert_eq!(
            shlex::split(exec).unwrap(),
            ["exec", "env", "K=v w", "numactl", "-N", "0", "serve", "a b", "$HOME"]
        );
        assert!(exec.contains("'$HOME'"), "{exec}");
        assert!(text.contains("cat > /tmp/x/config.json <<'INFERTUNE_FILE_'\n{\n\"a\": 1\n}\nINFERTUNE_FILE\nINFERTUNE_FILE_\n"), "{text}");
        assert!(text.contains("cd '/srv/my dir'\n"), "{text}");
    }
}
