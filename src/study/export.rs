//! Export of the winner: `best.sh` (the exact launch, shell-quoted), `best.json` (params, metrics,
//! engine version, card and host facts) and, for MindIE, `config.patch.json`.

use super::journal::{write_atomic, StudyMeta};
use super::select::{choose_winner, Winner};
use crate::engine::{Engine, Slot};
use crate::launch::LaunchSpec;
use crate::record::TrialRecord;
use crate::space::{EngineKind, StudySpec, Target};
use anyhow::Context as _;
use serde_json::{json, Map, Value as Json};
use std::cell::OnceCell;
use std::path::Path;

/// The winner's launch script.
pub const BEST_SH: &str = "best.sh";
/// The winner's facts.
pub const BEST_JSON: &str = "best.json";
/// MindIE: the winner's params as a nested patch of `config.json`.
pub const CONFIG_PATCH: &str = "config.patch.json";

/// Writes the exports of a study folder.
pub struct Exporter<'a> {
    space: &'a StudySpec,
    engine: &'a dyn Engine,
    meta: &'a StudyMeta,
    dir: &'a Path,
    version: OnceCell<Option<String>>,
}

impl<'a> Exporter<'a> {
    /// An exporter for the study in `dir`.
    pub fn new(
        space: &'a StudySpec,
        engine: &'a dyn Engine,
        meta: &'a StudyMeta,
        dir: &'a Path,
    ) -> Self {
        Exporter {
            space,
            engine,
            meta,
            dir,
            version: OnceCell::new(),
        }
    }

    /// Write `best.sh`, `best.json` (and the MindIE patch) for the current winner of `records`;
    /// returns the winner, or `None` (writing nothing) while no trial is feasible.
    pub fn write(&self, records: &[TrialRecord]) -> anyhow::Result<Option<Winner>> {
        let Some(winner) = choose_winner(records, self.meta.objective.direction) else {
            return Ok(None);
        };
        let number = winner.summary.number;
        let record = records
            .iter()
            .find(|r| r.number == number)
            .context("the winner is missing from the journal")?;
        let workdir = std::path::absolute(self.dir.join(format!("trial-{number}")))?;
        let slot = Slot {
            port: self.space.launch.port,
            devices: Vec::new(),
            workdir,
        };
        let spec = self
            .engine
            .launch_spec(self.space, &record.params, &slot)
            .with_context(|| format!("cannot rebuild the launch of trial {number}"))?;
        write_atomic(
            &self.dir.join(BEST_SH),
            &best_sh(&spec, &self.headline(&winner))?,
        )?;
        let version = self.version.get_or_init(|| self.engine_version(&spec));
        let best = best_json(self, &winner, record, &spec, version.as_deref());
        write_atomic(
            &self.dir.join(BEST_JSON),
            &serde_json::to_string_pretty(&best)?,
        )?;
        if self.space.engine.kind == EngineKind::Mindie {
            let patch = config_patch(self.space, record);
            write_atomic(
                &self.dir.join(CONFIG_PATCH),
                &serde_json::to_string_pretty(&patch)?,
            )?;
        }
        Ok(Some(winner))
    }

    fn headline(&self, w: &Winner) -> String {
        let o = &self.meta.objective;
        let mut line = format!(
            "{} {} = {:.2} ± {:.2} over {} run(s) (trial {})",
            o.direction.as_str(),
            o.metric,
            w.summary.mean,
            w.summary.ci95,
            w.summary.runs,
            w.summary.number
        );
        if let (Some(b), Some(g)) = (&w.baseline, w.gain_pct) {
            line.push_str(&format!("; baseline {:.2}, gain {g:+.1}%", b.mean));
        }
        line
    }

    /// The engine's version: from the space, else from `<program> --version` (best effort).
    fn engine_version(&self, spec: &LaunchSpec) -> Option<String> {
        if let Some(v) = &self.space.engine.version {
            return Some(v.clone());
        }
        let program = match &self.space.launch.command {
            Some(argv) => argv.first()?.clone(),
            None if spec.program == "numactl" => return None,
            None => spec.program.clone(),
        };
        version_of(&program)
    }
}

/// The first line of `program --version`, waiting at most 30 s.
fn version_of(program: &str) -> Option<String> {
    use std::process::{Command, Stdio};
    let mut child = Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let out = child.wait_with_output().ok()?;
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_string)
}

/// A bash script that writes the launch's files and `exec`s the exact command.
pub fn best_sh(spec: &LaunchSpec, headline: &str) -> anyhow::Result<String> {
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
    out.push_str(&format!("{}\n", command_line(spec)?));
    Ok(out)
}

/// The launch as one shell line: `exec [env K=V …] program args…`.
pub fn command_line(spec: &LaunchSpec) -> anyhow::Result<String> {
    let mut words: Vec<String> = vec!["exec".into()];
    if !spec.env.is_empty() {
        words.push("env".into());
        words.extend(spec.env.iter().map(|(k, v)| format!("{k}={v}")));
    }
    words.push(spec.program.clone());
    words.extend(spec.args.iter().cloned());
    let quoted: Result<Vec<String>, _> = words
        .iter()
        .map(|w| shlex::try_quote(w).map(|c| c.into_owned()))
        .collect();
    Ok(quoted
        .map_err(|e| anyhow::anyhow!("cannot shell-quote the launch command: {e}"))?
        .join(" "))
}

fn best_json(
    ex: &Exporter<'_>,
    w: &Winner,
    record: &TrialRecord,
    spec: &LaunchSpec,
    version: Option<&str>,
) -> Json {
    let o = &ex.meta.objective;
    let mut command = vec![spec.program.clone()];
    command.extend(spec.args.iter().cloned());
    json!({
        "study": ex.meta.name,
        "trial": w.summary.number,
        "params": record.params,
        "objective": {
            "direction": o.direction,
            "metric": o.metric,
            "subject_to": o.subject_to,
            "mean": w.summary.mean,
            "ci95": w.summary.ci95,
            "runs": w.summary.runs,
            "values": w.summary.values,
        },
        "baseline": w.baseline.as_ref().map(|b| json!({
            "trial": b.number, "mean": b.mean, "ci95": b.ci95, "gain_pct": w.gain_pct,
        })),
        "metrics": record.metrics,
        "engine": {
            "kind": ex.space.engine.kind,
            "model": ex.space.engine.model,
            "version": version,
        },
        "command": command,
        "env": spec.env,
        "card": ex.space.engine.card,
        "host": host_facts(),
    })
}

/// Host name, OS, CPU and memory of this machine (best effort).
pub fn host_facts() -> Json {
    use sysinfo::{CpuRefreshKind, MemoryRefreshKind, RefreshKind, System};
    let refresh = RefreshKind::nothing()
        .with_cpu(CpuRefreshKind::nothing())
        .with_memory(MemoryRefreshKind::nothing().with_ram());
    let system = System::new_with_specifics(refresh).ok();
    json!({
        "hostname": System::host_name().ok(),
        "os": System::long_os_version().ok(),
        "kernel": System::kernel_version().ok(),
        "arch": System::cpu_arch(),
        "cpu": system.as_ref().and_then(|s| s.cpus().first().map(|c| c.brand().to_string())),
        "logical_cpus": system.as_ref().map(|s| s.cpus().len()),
        "physical_cores": System::physical_core_count().ok(),
        "memory_bytes": system.as_ref().map(|s| s.total_memory()),
    })
}

/// The record's params that target a dotted config path, as a nested JSON object.
pub fn config_patch(space: &StudySpec, record: &TrialRecord) -> Json {
    let mut root = Json::Object(Map::new());
    for def in &space.parameters {
        if let (Some(Target::ConfigPath(path)), Some(value)) =
            (&def.target, record.params.get(&def.name))
        {
            let keys: Vec<&str> = path.split('.').collect();
            set_path(
                &mut root,
                &keys,
                serde_json::to_value(value).unwrap_or(Json::Null),
            );
        }
    }
    root
}

fn set_path(node: &mut Json, keys: &[&str], value: Json) {
    let Some((first, rest)) = keys.split_first() else {
        *node = value;
        return;
    };
    if !node.is_object() {
        *node = Json::Object(Map::new());
    }
    if let Json::Object(map) = node {
        let child = map.entry(first.to_string()).or_insert(Json::Null);
        set_path(child, rest, value);
    }
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
        let text = best_sh(&spec(), "x").unwrap();
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
    fn config_patch_nests_dotted_paths() {
        let mut root = Json::Object(Map::new());
        set_path(&mut root, &["B", "S", "maxBatchSize"], json!(64));
        set_path(&mut root, &["B", "S", "maxPrefillTokens"], json!(8192));
        set_path(&mut root, &["B", "npuDeviceIds"], json!([[0, 1]]));
        assert_eq!(
            root,
            json!({"B": {"S": {"maxBatchSize": 64, "maxPrefillTokens": 8192}, "npuDeviceIds": [[0, 1]]}})
        );
    }
}
